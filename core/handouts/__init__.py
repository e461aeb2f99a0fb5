"""Handouts: a lesson or a view as one offline web page, and the checked predictions students commit before a reveal.

- predictions.py: a step's "prediction" field (a choice, a number with a tolerance, a token), validated, and how
  an answer is graded;
- figures.py: a step's figures as data (Vega-Lite specs with their numbers inline) and the texts its quotes show;
- collect.py / collect_views.py: those figures computed by the same core experiments the window's views run;
- page.py: the page put together by the Jinja2 templates in resources/handouts, the plotting library inlined;
- answers.py: the answers CSV a page downloads, read back and summarised per step.
"""
