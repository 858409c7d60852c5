"""What every wing needs, one mechanism each; the bottom layer (it imports nothing else of
jaxparadigm):

* :mod:`~jaxparadigm.common.errors` -- the project's error types (``InputError`` ...);
* :mod:`~jaxparadigm.common.numbers` -- the int check and the float/range check;
* :mod:`~jaxparadigm.common.quoting` -- a value quoted in a message, bounded; ``plural``;
* :mod:`~jaxparadigm.common.bounded_reading` -- the bounded JSON reader, the binary sniff;
* :mod:`~jaxparadigm.common.progress` -- a bar on a terminal, plain lines elsewhere;
* :mod:`~jaxparadigm.common.file_lock` -- the advisory lock of a folder's writer.
"""
