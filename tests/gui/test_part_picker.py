"""The part picker: only a model's own heads can be ticked, ticks survive a new shape where they still fit, and a
choice made before any model waits for one."""

from __future__ import annotations

from gui.widgets.part_picker import PartPicker


def head_picker(qtbot) -> PartPicker:
    picker = PartPicker(lambda layer, head: f"L{layer}H{head}")
    qtbot.addWidget(picker)
    return picker


def test_a_choice_before_the_model_waits_for_its_shape(qtbot):
    picker = head_picker(qtbot)
    picker.set_selected([(1, 0), (5, 5)])
    assert picker.selected() == () and picker.text() == "L1H0, L5H5 ▾"  # named, not yet tickable
    with qtbot.waitSignal(picker.changed):
        picker.set_shape(2, 4)
    assert picker.selected() == ((1, 0),) and picker.text() == "L1H0 ▾"  # L5H5 is not in a 2 x 4 model


def test_ticks_follow_the_grid_and_a_new_shape_keeps_those_that_fit(qtbot):
    picker = head_picker(qtbot)
    picker.set_shape(2, 4)
    assert picker.box(2, 0) is None and picker.box(1, 3) is not None
    with qtbot.waitSignal(picker.changed):
        picker.box(1, 3).setChecked(True)
    picker.box(0, 1).setChecked(True)
    assert picker.selected() == ((0, 1), (1, 3))
    assert picker.set_selected([(0, 1), (1, 3), (7, 0)]) == ((7, 0),)  # what the grid lacks is said, not ticked
    with qtbot.waitSignal(picker.changed):
        picker.set_shape(1, 2)
    assert picker.selected() == ((0, 1),)
    picker.set_selected([(0, 0), (0, 1)] + [(0, 1)] * 3)
    assert picker.text() == "L0H0, L0H1 ▾"


def test_many_ticks_are_counted_on_the_button(qtbot):
    picker = head_picker(qtbot)
    picker.set_shape(3, 3)
    picker.set_selected([(layer, head) for layer in range(3) for head in range(3)])
    assert picker.text() == "L0H0, L0H1, L0H2, L1H0 +5 more ▾" and "L2H2" in picker.toolTip()
