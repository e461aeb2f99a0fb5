#!/usr/bin/env bash
# Install Transformer Explorer for the current user, or remove it again. No root needed.
#
#   ./install.sh                  copy the app to ~/.local/opt/transformer-explorer, add it to the
#                                 applications menu and put `transformer-explorer` in ~/.local/bin
#   ./install.sh --uninstall      remove everything the install added
#
# Options: --prefix DIR   where the app goes (default ~/.local/opt/transformer-explorer)
#          --bundle DIR   the app folder to install (default: transformer-explorer/ beside this script)
set -euo pipefail

APP_ID=transformer-explorer
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_HOME=${XDG_DATA_HOME:-$HOME/.local/share}
PREFIX=$HOME/.local/opt/$APP_ID
BIN_DIR=$HOME/.local/bin
BUNDLE=$HERE/$APP_ID
MODE=install
MANIFEST_NAME=.installed-files
if [ -f "$HERE/$MANIFEST_NAME" ]; then
    PREFIX=$HERE  # this is the installed copy: it removes or refreshes itself
fi

die() { echo "install.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case $1 in
        --uninstall) MODE=uninstall ;;
        --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; PREFIX=$2; shift ;;
        --bundle) [ $# -ge 2 ] || die "--bundle needs a folder"; BUNDLE=$2; shift ;;
        -h|--help) sed -n '2,/^[^#]/{/^#/p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done

case $PREFIX in
    /*) ;;
    *) PREFIX=$(pwd)/$PREFIX ;;
esac
# "DIR/" names DIR: the staging folder beside it and every check below need the name without the slash.
while [ "${#PREFIX}" -gt 1 ] && [ "${PREFIX%/}" != "$PREFIX" ]; do
    PREFIX=${PREFIX%/}
done
[ "$PREFIX" != / ] || die "the install folder cannot be / itself"
# The menu entry's Exec line cannot carry these characters without escaping rules of its own.
case $PREFIX in
    *[\"\`\$\\%]*) die "the install folder may not contain \" \` \$ \\ or % (got $PREFIX)" ;;
esac

desktop_file=$DATA_HOME/applications/$APP_ID.desktop
launcher=$BIN_DIR/$APP_ID

# A launcher or menu entry is this script's when it points into a folder that an install of ours
# made (one with the manifest); anything else in its place belongs to the user and stays.
ours_in() {
    local executable=$1
    [ -n "$executable" ] && [ -f "$(dirname "$executable")/$MANIFEST_NAME" ]
}
launcher_is_ours() {
    [ -L "$launcher" ] && ours_in "$(readlink "$launcher")"
}
desktop_file_is_ours() {
    [ -f "$desktop_file" ] && ours_in "$(sed -n 's/^TryExec=//p' "$desktop_file" | head -n 1)"
}

refresh_menus() {
    if command -v update-desktop-database >/dev/null 2>&1; then
        update-desktop-database -q "$DATA_HOME/applications" 2>/dev/null || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1; then
        gtk-update-icon-cache -q -t "$DATA_HOME/icons/hicolor" 2>/dev/null || true
    fi
}

uninstall() {
    local manifest=$PREFIX/$MANIFEST_NAME
    if [ ! -f "$manifest" ]; then
        if [ -e "$PREFIX" ]; then
            die "$PREFIX was not made by this script (no $MANIFEST_NAME in it); remove it yourself if you are sure"
        fi
        echo "Transformer Explorer is not installed in $PREFIX; nothing to remove."
        return 0
    fi
    while IFS= read -r path; do
        [ -n "$path" ] || continue
        if [ "$path" = "$launcher" ]; then
            # Only our own link: another program of the same name stays.
            if [ -L "$path" ]; then
                case $(readlink "$path") in "$PREFIX"/*) rm -f "$path" ;; esac
            fi
        elif [ "$path" = "$desktop_file" ]; then
            [ "$(sed -n 's/^TryExec=//p' "$path" 2>/dev/null | head -n 1)" = "$PREFIX/$APP_ID" ] && rm -f "$path"
        elif [ -f "$path" ] || [ -L "$path" ]; then
            rm -f "$path"
        fi
    done < "$manifest"
    rm -rf "$PREFIX"
    refresh_menus
    echo "Removed Transformer Explorer from $PREFIX, the applications menu and $BIN_DIR."
}

install_app() {
    [ -x "$BUNDLE/$APP_ID" ] || die "no app found at $BUNDLE/$APP_ID (pass --bundle DIR)"
    [ -f "$HERE/$APP_ID.desktop" ] || die "the menu entry template $HERE/$APP_ID.desktop is missing"
    local bundle_real prefix_parent
    bundle_real=$(cd "$BUNDLE" && pwd -P)
    prefix_parent=$(dirname "$PREFIX")
    mkdir -p "$prefix_parent"
    if [ -d "$PREFIX" ] && [ "$(cd "$PREFIX" && pwd -P)" = "$bundle_real" ]; then
        die "the app folder and the install folder are the same ($PREFIX)"
    fi
    if [ -e "$PREFIX" ] && [ ! -f "$PREFIX/$MANIFEST_NAME" ]; then
        die "$PREFIX exists and was not made by this script; choose another --prefix"
    fi

    # Copy next to the target first, so a failed copy leaves any earlier install untouched.
    local staging=$PREFIX.partial.$$
    trap 'rm -rf "$staging"' EXIT
    rm -rf "$staging"
    cp -a "$BUNDLE" "$staging"
    cp "${BASH_SOURCE[0]}" "$staging/install.sh"
    cp "$HERE/$APP_ID.desktop" "$staging/$APP_ID.desktop.in"
    chmod +x "$staging/install.sh"
    if [ -f "$PREFIX/$MANIFEST_NAME" ]; then
        uninstall >/dev/null
    fi
    mv "$staging" "$PREFIX"
    trap - EXIT

    local manifest=$PREFIX/$MANIFEST_NAME
    : > "$manifest"
    mkdir -p "$BIN_DIR" "$DATA_HOME/applications"
    local kept=""
    if [ -e "$launcher" ] || [ -L "$launcher" ]; then
        launcher_is_ours || kept="$kept $launcher"
    fi
    if [ -z "$kept" ]; then
        ln -sfn "$PREFIX/$APP_ID" "$launcher"
        echo "$launcher" >> "$manifest"
    fi
    local menu_entry=yes
    if [ -e "$desktop_file" ] && ! desktop_file_is_ours; then
        kept="$kept $desktop_file"
        menu_entry=no
    fi

    local executable_for_sed
    executable_for_sed=$(printf '%s' "$PREFIX/$APP_ID" | sed 's/[&|]/\\&/g')
    if [ "$menu_entry" = yes ]; then
        sed -e "s|@EXEC@|\"$executable_for_sed\"|g" -e "s|@TRYEXEC@|$executable_for_sed|g" \
            "$PREFIX/$APP_ID.desktop.in" > "$desktop_file"
        chmod 644 "$desktop_file"
        echo "$desktop_file" >> "$manifest"
    fi

    local icons=$PREFIX/_internal/resources/icons png size target
    for png in "$icons"/hicolor/*/apps/"$APP_ID".png; do
        [ -f "$png" ] || continue
        size=$(basename "$(dirname "$(dirname "$png")")")
        target=$DATA_HOME/icons/hicolor/$size/apps/$APP_ID.png
        mkdir -p "$(dirname "$target")"
        cp "$png" "$target"
        echo "$target" >> "$manifest"
    done
    if [ -f "$icons/$APP_ID.svg" ]; then
        target=$DATA_HOME/icons/hicolor/scalable/apps/$APP_ID.svg
        mkdir -p "$(dirname "$target")"
        cp "$icons/$APP_ID.svg" "$target"
        echo "$target" >> "$manifest"
    fi
    refresh_menus

    echo "Installed Transformer Explorer in $PREFIX."
    if [ -n "$kept" ]; then
        echo "  left alone (not written by this script):$kept"
    fi
    [ "$menu_entry" = no ] || echo "  menu entry: $desktop_file"
    case $kept in *"$launcher"*) ;; *) echo "  command:    $launcher" ;; esac
    case ":$PATH:" in
        *":$BIN_DIR:"*) ;;
        *) echo "  ($BIN_DIR is not on your PATH; the menu entry works regardless)" ;;
    esac
    echo "Remove it with: $PREFIX/install.sh --uninstall"
    report_missing_system_libraries
}

# Qt's X11 platform plugin links these; the bundle cannot carry them because they must match the
# machine's X server libraries.
report_missing_system_libraries() {
    local known missing="" library
    known=$( { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true)
    [ -n "$known" ] || return 0
    for library in libxcb-cursor.so.0 libxcb-icccm.so.4 libxcb-keysyms.so.1 libxkbcommon-x11.so.0 libEGL.so.1 \
                   libfontconfig.so.1 libdbus-1.so.3; do
        grep -qF "$library" <<<"$known" || missing="$missing $library"
    done
    if [ -n "$missing" ]; then
        echo "Note: Qt needs these system libraries, which this machine lacks:$missing"
        echo "  Debian/Ubuntu: sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0 libegl1 libfontconfig1 libdbus-1-3"
        echo "  Fedora: sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms libxkbcommon-x11 mesa-libEGL fontconfig dbus-libs"
    fi
}

if [ "$MODE" = uninstall ]; then
    uninstall
else
    install_app
fi
