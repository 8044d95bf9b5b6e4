"""The ranking arithmetic, with plain numbers."""

import math

import numpy as np
import pytest

from vaultmem.text import scoring

TABLE = {"task": 24, "note": 30, "event": 168, "preference": 720, "fact": 2400, "permanent": None, "default": 30}


def test_half_life_by_lifecycle_with_default_and_permanent():
    assert scoring.half_life_hours("task", TABLE) == 24
    assert scoring.half_life_hours("preference", TABLE) == 720
    assert scoring.half_life_hours("something-else", TABLE) == 30
    assert math.isinf(scoring.half_life_hours("permanent", TABLE))


def test_decay_halves_once_per_half_life_and_never_for_permanent():
    assert scoring.decay(30.0, 30.0) == pytest.approx(0.5)
    assert scoring.decay(60.0, 30.0) == pytest.approx(0.25)
    assert scoring.decay(0.0, 30.0) == pytest.approx(1.0)
    assert scoring.decay(-5.0, 30.0) == pytest.approx(1.0)  # clock skew: a future write is fresh, not stronger
    assert scoring.decay(10_000.0, math.inf) == pytest.approx(1.0)


def test_strength_rewards_use_with_a_cap():
    assert scoring.strength(5.0, 0, 0.5, 5.0) == pytest.approx(5.0)
    assert scoring.strength(5.0, 4, 0.5, 5.0) == pytest.approx(7.0)
    assert scoring.strength(5.0, 100, 0.5, 5.0) == pytest.approx(10.0)
    assert scoring.strength(5.0, 2, 0.5, 5.0, feedback=0.5) == pytest.approx(3.0)


def test_effective_counts_from_the_last_use_not_the_write():
    hour = 3600.0
    now = 1000 * hour
    written_long_ago, factor = scoring.effective(8.0, 0, now - 60 * hour, 0.0, now, 30.0, 0.5, 5.0)
    used_just_now, fresh = scoring.effective(8.0, 1, now - 60 * hour, now, now, 30.0, 0.5, 5.0)
    assert (written_long_ago, factor) == (pytest.approx(2.0), pytest.approx(0.25))
    assert (used_just_now, fresh) == (pytest.approx(8.5), pytest.approx(1.0))


def test_bm25_grows_with_tf_and_shrinks_with_frequency():
    tf = np.array([1, 2, 4], dtype=np.uint16)
    lengths = np.array([10, 10, 10], dtype=np.float32)
    weights = scoring.bm25(tf, lengths, 10.0, scoring.idf(3, 100), 1.2, 0.3)
    assert weights[0] < weights[1] < weights[2]
    assert scoring.idf(1, 100) > scoring.idf(50, 100) > 0


def test_weighted_fusion_and_rrf():
    channels = {"lexical": np.array([1.0, 0.2]), "strength": np.array([0.0, 1.0])}
    fused = scoring.fuse_weighted(channels, {"lexical": 1.0, "strength": 0.15})
    assert fused.tolist() == pytest.approx([1.0, 0.35])
    rrf = scoring.fuse_rrf(channels, {"lexical": 1.0, "strength": 1.0}, 60)
    assert rrf[0] == pytest.approx(1 / 61 + 0)  # strength 0 adds nothing
    assert rrf[1] == pytest.approx(1 / 62 + 1 / 61)


def test_normalise_keeps_zeros():
    assert scoring.normalise(np.array([0.0, 2.0, 4.0])).tolist() == [0.0, 0.5, 1.0]
    assert scoring.normalise(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_group_bm25_scores_each_episode_as_one_text():
    # a term found twice in group 0 (two documents), once in group 2, never in group 1
    groups, tf = np.array([0, 0, 2]), np.array([1, 1, 1])
    lengths = np.array([10.0, 10.0, 10.0])
    weights = scoring.group_bm25(groups, tf, lengths, 10.0, 3, 1.2, 0.0)
    term_idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    assert weights[0] == pytest.approx(term_idf * 2 * 2.2 / (2 + 1.2))
    assert weights[1] == 0.0
    assert weights[2] == pytest.approx(term_idf * 2.2 / (1 + 1.2))


def test_feedback_weights_are_term_shares_weighted_by_relevance():
    votes = scoring.feedback_weights([{"pets": 2, "beach": 2}, {"pets": 1}], [2.0, 1.0])
    assert votes == {"pets": pytest.approx(1.0), "beach": pytest.approx(0.5)}
    assert scoring.feedback_weights([{"a": 1}], [0.0]) == {}   # a first pass that found nothing votes for nothing
    assert scoring.feedback_weights([], []) == {}


def test_bm25_takes_one_idf_per_entry():
    tf, lengths = np.array([1, 1]), np.array([4.0, 4.0])
    both = scoring.bm25(tf, lengths, 4.0, np.array([1.0, 2.0]), 1.2, 0.3)
    assert both[1] == pytest.approx(2 * both[0])
    assert both[0] == pytest.approx(scoring.bm25(tf[:1], lengths[:1], 4.0, 1.0, 1.2, 0.3)[0])


@pytest.mark.parametrize("seed", range(20))
def test_top_k_picks_the_same_items_whatever_order_the_index_holds_them_in(seed):
    """Two clones number their notes differently: the k best by (score, time) must be the same notes,
    with every note tied on both at the cut kept for the caller's path order."""
    rng = np.random.default_rng(seed)
    n, k = 60, 7
    values = rng.integers(0, 4, n).astype(np.float32)  # many ties
    then = rng.integers(0, 5, n).astype(np.float64)
    names = np.arange(n)  # a note's identity, whatever its index
    order = rng.permutation(n)
    first = set(names[scoring.top_k(values, k, then)].tolist())
    again = set(order[scoring.top_k(values[order], k, then[order])].tolist())
    assert first == again
    key = sorted(zip(-values, -then))[k - 1]
    assert {i for i in range(n) if (-values[i], -then[i]) <= key} == first  # exactly the k best and the cut's ties
