"""The report's workings (loading a run, comparing two, grouping failures, the HTML payload);
the public names are re-exported by :mod:`osmosis_ai.eval.report`."""
