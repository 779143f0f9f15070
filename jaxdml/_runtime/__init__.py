"""Private runtime plumbing: devices, transfers and the BLAS thread limit (``_device``), the compiled-executable
cache and its key, logging, warnings, and shape padding. Nothing here is public; ``jaxdml.config``,
``jaxdml.compilation`` and ``jaxdml.exceptions`` are the public faces."""
