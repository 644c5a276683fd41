"""In-process speed and memory: codecs, the fast predictor, decoding and model footprints."""
