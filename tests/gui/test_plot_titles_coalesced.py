"""A plot's title is fitted once per pass of the event loop, however many titles and sizes it was given in it."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from gui.widgets.plot_titles import wrap_title

LONG = "Attention of every head of every layer to every earlier token of the text, averaged over the batch"


def test_titles_and_resizes_in_one_pass_fit_once_with_the_last_of_them(qtbot):
    plot = wrap_title(pg.PlotWidget())
    qtbot.addWidget(plot)
    plot.resize(600, 300)
    plot.show()
    qtbot.waitExposed(plot)
    title = plot._wrapping_title
    qtbot.waitUntil(lambda: not title._refit_pending)
    one_line = plot.getPlotItem().titleLabel.maximumHeight()
    fits = title.fits

    for width in (500, 400, 300, 200):
        plot.setTitle(f"{LONG} ({width})")
        plot.resize(width, 300)
    assert title.fits == fits  # nothing fitted yet: the calls above are one change
    qtbot.waitUntil(lambda: not title._refit_pending)
    assert title.fits == fits + 1
    # The one fit saw the last title and width: the long title wraps onto several lines at 200 px.
    assert plot.getPlotItem().titleLabel.maximumHeight() > 2 * one_line
    assert plot.getPlotItem().titleLabel.item.textWidth() <= 200


def test_an_explicit_fit_answers_a_pending_request(qtbot):
    plot = wrap_title(pg.PlotWidget())
    qtbot.addWidget(plot)
    plot.show()
    qtbot.waitExposed(plot)
    title = plot._wrapping_title
    qtbot.waitUntil(lambda: not title._refit_pending)
    plot.setTitle(LONG)
    fits = title.fits
    title.fit()
    QApplication.processEvents()  # the request's zero timer has fired by now
    assert title.fits == fits + 1
