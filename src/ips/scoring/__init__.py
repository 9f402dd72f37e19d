"""v(x_S) of a causal LM on every masked prompt of a shard (step 3): masking and
log-odds, the plain and trie engines, occlusion scores, resumable shards.

Modules:

* ``log_odds``   the arithmetic of v(x_S): masking and log-odds
* ``engine``     `Engine`: the forward passes of masked prompts
* ``trie``       shared-prefix (trie) evaluation of a prompt's masked versions
* ``occlusion``  occlusion scores of a reference model
* ``shard``      one shard scored, resumable, into its values file
"""
