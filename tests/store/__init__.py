"""The storage port, its contract suite on both backends, the chain, codec, snapshots, spills."""
