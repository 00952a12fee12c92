"""What a user reads off the figures (issue 30, items 6 and 10): fold curves one colour each; one outlier does
not squash the neighbour scatter."""


def test_fold_curves_get_distinct_colours():
    from mia_core.reports import plots

    roc = {"fpr": [0, 0.5, 1], "tpr": [0, 0.7, 1]}
    folds = {f"fold {i + 1}": {"roc": roc, "auc": 0.6, "colour": plots.PALETTE[i % len(plots.PALETTE)]}
             for i in range(5)}
    colours = [t.line.color for t in plots.roc_figure(folds).data if t.name.startswith("fold")]
    assert len(colours) == 5 == len(set(colours))


def test_one_outlier_does_not_squash_the_neighbour_scatter():
    from mia_core.reports import plots

    x = [0.01 + 0.001 * i for i in range(24)] + [0.9]  # 24 neighbours near 0 and one far away
    y = [0.05 * ((-1) ** i) for i in range(24)] + [6.0]
    fig = plots.neighbour_scatter(x, y)
    lo, hi = fig.layout.xaxis.range
    assert hi < 0.2 and lo < 0.01  # the 24 fill the view
    assert "1 neighbour(s) outside this view" in fig.layout.annotations[0].text
    assert plots.robust_range([0.1, 0.2, 0.3, 0.25, 0.15]) == (None, None, 0)  # nothing to hide: autoscale
