"""Threads for a rank of an MPI job: several ranks on one machine share its
cores, so unless ``OXNET_NUM_THREADS`` or ``OMP_NUM_THREADS`` says
otherwise, each rank's thread pool takes ``cores // local ranks`` threads
(at least one). Runs at ``import oxnet``, before the pool starts; needs no
MPI (the launcher's variables give the local count)."""

import os

# variables launchers set to the number of ranks on this machine
_LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE",
                         "PMI_LOCAL_SIZE")


def local_ranks():
    """How many ranks of this job run on this machine (1 outside a job)."""
    for name in _LOCAL_SIZE_VARIABLES:
        try:
            value = int(os.environ.get(name, ""))
        except ValueError:
            continue
        if value > 0:
            return value
    return 1


def divide_cores():
    """Sets ``OXNET_NUM_THREADS`` for this rank's share of the cores; returns it (None when left alone)."""
    if "OXNET_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ:
        return None
    ranks = local_ranks()
    if ranks <= 1:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    share = max(1, cores // ranks)
    os.environ["OXNET_NUM_THREADS"] = str(share)
    return share
