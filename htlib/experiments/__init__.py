"""The experiments layer: what each chapter of the book computes, at the papers' settings.

One module per chapter holds that chapter's figure configurations, sweeps (run through the result
cache), claim records and figure helpers.  It may name a paper's figures and numbers; the numerics
modules beneath it (``htlib.spectra``, ``htlib.htmp``, ``htlib.linear``, ...) never do.
"""
