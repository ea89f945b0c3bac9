"""The container path: a Docker engine, the suite's images, and the leftovers of dead runs.

- :mod:`conformance.containers.engine`: find or start a Docker engine; remove what dead runs left.
- :mod:`conformance.containers.images`: build the images a run needs (the image contract).
"""
