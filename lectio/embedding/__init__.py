"""The embedding model: the packaged weights on torch or ONNX Runtime, numerics chosen by the
machine, and the cache keyed by text and model."""
