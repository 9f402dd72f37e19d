"""The models that get scored (step 2): config entries, sources (hub, path, GGUF
packages, random weights), remote-code models as a native class, the model cache, loading."""
