"""The recurrent example (examples/python/char_lm.py): a 2-layer LSTM
character model learns text from a small grammar."""

import char_lm


def test_char_lm_perplexity_falls_and_samples_grammar_words():
    reports, sentence = char_lm.main(max_steps=100, quiet=True)
    # the first report averages the first 25 updates (near-uniform guesses
    # over ~30 characters); the grammar's text is nearly deterministic
    assert reports[0] > 5.0
    assert reports[-1] < 2.0
    assert sentence.startswith("the ")
    words = set(" ".join(char_lm.SUBJECTS + char_lm.VERBS + char_lm.OBJECTS + char_lm.ENDINGS).split())
    sampled = [w.strip(".") for w in sentence.split()[:-1]]
    assert sum(w in words for w in sampled) >= len(sampled) * 0.8, sentence
