"""The files between the steps, one module per kind: its layout, writer and reader
(values, interactions, metrics, factors), the shards of one (model, dataset) read together,
and the checksummed HDF5 they are written in.

Modules:

* ``hdf5``          checksummed HDF5 datasets, atomic writes, guarded reads
* ``values``        the values file of `ips score`
* ``shards``        the shards of one (model, dataset) read and merged
* ``interactions``  the interactions file of `ips fit`
* ``metrics``       the metrics file of `ips metrics`
* ``factors``       the factors file of `ips factors`
* ``null_fits``     the null-fits file of `ips null-fits`
* ``archive``       a study's archive: its raw scores, compressed, with a manifest
* ``tables``        a study's committed CSV tables against the same tables made again
"""
