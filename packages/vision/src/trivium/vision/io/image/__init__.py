"""Images: the codecs (JPEG, PNG, WebP natively; GIF, AVIF, HEIC and more through Pillow).

The public names are :mod:`trivium.vision.io`'s (``decode_image``, ``decode_jpeg``,
``ImageReadMode``, ...); the modules here are the format dispatch (``decode``), one module
per codec, the shared modes, limits and errors (``codec``), the C++ operators (``ops``) and
their kernels, and EXIF orientation.

Example:
    >>> from trivium.vision.io import decode_jpeg
    >>> decode_jpeg.__module__
    'trivium.vision.io.image.jpeg'
"""
