"""The models that get scored (step 2): config entries, sources (hub, path, GGUF
packages, random weights), remote-code models as a native class, the model cache, loading.

Modules:

* ``entries``         a model entry: source, attributes, a job's memory
* ``cache``           the model cache, one directory a model
* ``gguf``            GGUF weights in pip packages, checked and converted
* ``native``          remote-code models run by a transformers class
* ``random_weights``  tiny random-weight models of the paper's classes
* ``redraw``          a configured model with its weights re-drawn (the controls')
* ``loading``         loading an entry as (model, tokenizer, mask token)
* ``attributes``      the attributes a model's scores record, from the checkpoint where the entry gives none
* ``testing``         tiny models for tests and benchmarks only
"""
