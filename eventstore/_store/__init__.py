"""The storage port and what every backend shares.

The chain, the codec, snapshots, the audit views' catalogue and spill storage.
"""
