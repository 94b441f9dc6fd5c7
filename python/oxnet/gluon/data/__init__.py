"""``mx.gluon.data``: datasets, samplers and the DataLoader that batches them.

::

    from oxnet.gluon.data import ArrayDataset, DataLoader
    ds = ArrayDataset(features, labels)            # NDArrays, numpy arrays or lists
    for x, y in DataLoader(ds, batch_size=32, shuffle=True, num_workers=2):
        ...
"""

from .dataset import *  # noqa: F401,F403
from .sampler import *  # noqa: F401,F403
from .dataloader import *  # noqa: F401,F403
from . import dataset, sampler, dataloader  # noqa: F401
from . import vision  # noqa: F401,E402
