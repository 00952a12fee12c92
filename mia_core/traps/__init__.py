"""Copyright traps (Meeus, Shilov, Faysse and de Montjoye, ICML 2024): unique sequences generated before
publishing, a random half of them planted in the owner's documents and the rest kept secret, and later a test of
whether a model finds the planted ones more familiar than the secret ones.

Why its p-value is exact: the coin flip (:func:`.record.assign`) is drawn after every filter on one batch, within
perplexity buckets, and sealed (:mod:`.record`) before any document is published. Under the null hypothesis (the
model was not trained on the planted traps), a trap's score does not depend on the coin flip, so every
within-bucket assignment was equally likely to be the real one, and the rank of the real one among them
(:mod:`.permutation`) is uniform, whatever the model, the texts and the score. The reference code draws its
non-member traps from a second generation run instead; here they are the same batch.

* :mod:`.make`     generate (:mod:`.generate`), split, seal: ``mia traps make``
* :mod:`.insert`   plant copies in the documents and check them: ``mia traps insert``
* :mod:`.audit`    score every trap and run the pre-registered test: ``mia traps test`` (the registered audit
  ``traps``, :mod:`mia_core.audits.traps`)
"""
