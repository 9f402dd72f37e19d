"""The models that get scored (step 2): config entries, sources (hub, path, GGUF
packages, random weights), the model cache, loading."""
