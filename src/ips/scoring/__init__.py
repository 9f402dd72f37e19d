"""v(x_S) of a causal LM on every masked prompt of a shard (step 3): masking and
log-odds, the plain and trie engines, occlusion scores, resumable shards."""
