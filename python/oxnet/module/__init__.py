"""``mx.mod``: modules, MXNet 1.x's symbolic training API.

What exists: ``BaseModule`` (``fit``, ``score``, ``predict``,
``iter_predict``), ``Module`` (one device), ``BucketingModule``,
``SequentialModule``, ``PythonModule``, ``PythonLossModule``. Not yet:
data-parallel binding over several contexts.
"""

from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule", "PythonModule", "PythonLossModule"]
