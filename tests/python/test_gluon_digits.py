"""The Python main job (examples/python/gluon_digits.py): a hybridized Gluon
CNN with seed 001's numpy sigmoid operator learns the UCI digits."""

import gluon_digits


def test_gluon_digits_learns_with_a_numpy_custom_operator_inside():
    losses, held_out = gluon_digits.main(epochs=6, seed=3)
    assert losses[-1] < losses[0] / 4
    assert held_out >= 0.97
