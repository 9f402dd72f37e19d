"""The files between the steps, one module per kind: its layout, writer and reader
(values, interactions, metrics, factors), the shards of one (model, dataset) read together,
and the checksummed HDF5 they are written in."""
