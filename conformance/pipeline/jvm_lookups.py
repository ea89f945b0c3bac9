"""Remembered class, package and static-method lookups on the Spark driver's py4j view of the JVM.

PySpark finds a JVM function anew at every use: ``functions.col("x")`` asks the JVM
what ``org.apache.spark.sql.functions`` is, then what its member ``col`` is, and only
then calls it; every list of columns passes through ``PythonUtils.toSeq`` the same way.
Building one small run's checks makes ~5,000 such reflection round trips, each a
socket exchange answered by a driver thread (measured: a small judge ~0.4 s faster
without them).

:func:`remember` makes one view of the JVM keep what it found: a class, a package or
a static method, once found by name, is kept as an attribute of the object it was
found on, so that the next lookup is an ordinary Python attribute read.

Guarantees:
- Every call still reaches the JVM; only the lookups of names are answered from memory.
- Only classes, packages and static methods are kept, never the value of a static
  field (read from the JVM at every access, as before), never a failed lookup.
- Only the given view changes (PySpark's one gateway view); other py4j objects are untouched.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage, JVMView


def _kept(owner: Any, name: str, found: Any) -> Any:
    """``found`` (the answer for ``owner.name``), kept on ``owner`` when it is a lasting answer."""
    if type(found) is JavaClass:
        found.__class__ = _Class
    elif type(found) is JavaPackage:
        found.__class__ = _Package
    elif not isinstance(found, JavaMember):
        return found   # a static field's value, or anything else: asked again next time
    owner.__dict__[name] = found
    return found


class _View(JVMView):
    def __getattr__(self, name: str) -> Any:
        return _kept(self, name, JVMView.__getattr__(self, name))


class _Package(JavaPackage):
    def __getattr__(self, name: str) -> Any:
        return _kept(self, name, JavaPackage.__getattr__(self, name))


class _Class(JavaClass):
    def __getattr__(self, name: str) -> Any:
        return _kept(self, name, JavaClass.__getattr__(self, name))


def remember(view: JVMView) -> None:
    """Make ``view`` (e.g. ``SparkContext._jvm``) keep the classes, packages and static methods it finds."""
    if type(view) is JVMView:
        view.__class__ = _View
