"""``mx.sym.contrib``: every registry operator named ``_contrib_NAME``
(built-in or loaded from a library) as ``NAME``, as in MXNet; e.g.
``mx.sym.contrib.CTCLoss`` is ``mx.sym._contrib_CTCLoss``. Filled in by
``oxnet.symbol._ops.refresh``."""


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbol form of ``mx.nd.contrib.rand_zipfian``: ``num_sampled`` classes
    drawn from the approximately Zipfian distribution over ``[0, range_max)``
    and the expected counts of ``true_classes`` and of the draws."""
    import math
    from .random import uniform
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    # exp(rand) - 1 lies in [0, range_max); the clip guards the rounding at the ends
    from .. import symbol as _ns
    sampled_classes = _ns.clip(rand.exp() - 1, a_min=0, a_max=range_max - 1).astype("int64")
    true_cls = true_classes.astype("float64")
    expected_count_true = ((true_cls + 2.0) / (true_cls + 1.0)).log() / log_range * num_sampled
    sampled_cls = sampled_classes.astype("float64")
    expected_count_sampled = ((sampled_cls + 2.0) / (sampled_cls + 1.0)).log() / log_range * num_sampled
    return sampled_classes, expected_count_true, expected_count_sampled


def _flatten_symbols(nested, what):
    """The single-output Symbols of ``nested`` (a Symbol or a nested
    list/tuple of them) in order, and its format (as the NDArray form's)."""
    from ..ndarray.contrib import _flatten
    from .symbol import Symbol
    flat, fmt = _flatten(nested, what, Symbol)
    for s in flat:
        if len(s.list_outputs()) != 1:
            raise ValueError(f"{what}: a grouped symbol of {len(s.list_outputs())} outputs; "
                             "pass a list of single-output symbols")
    return flat, fmt


def foreach(body, data, init_states, name="foreach"):
    """The symbolic form of ``mx.nd.contrib.foreach``: ``body(data_slice,
    states) -> (outputs, new_states)`` is called once on placeholder
    symbols and becomes the subgraph of one ``_foreach`` node, which runs it
    for each element of ``data`` along axis 0 (any length, known when the
    graph runs). Returns ``(outputs, states)`` in the structures ``body``
    gave, each output stacked over the steps on a new axis 0.

    The body may use other symbols' variables (a block's weights): they
    become inputs of the node, and gradients flow to them through every
    step. A body that uses an outer symbol which is not a variable raises
    an error: pass such a value as data or a state."""
    from ..ndarray.contrib import _regroup
    from .symbol import Group, compose_op, var

    flat_data, data_fmt = _flatten_symbols(data, "foreach's data")
    flat_states, state_fmt = _flatten_symbols(init_states, "foreach's init_states")
    if not flat_data:
        raise ValueError("foreach needs data to iterate over, but data holds no Symbol")
    data_vars = [var(f"{name}_data{i}") for i in range(len(flat_data))]
    state_vars = [var(f"{name}_state{i}") for i in range(len(flat_states))]
    result = body(_regroup(data_vars, data_fmt), _regroup(state_vars, state_fmt))
    if not isinstance(result, (list, tuple)) or len(result) != 2:
        raise ValueError("foreach's body must return (outputs, new_states)")
    outputs, new_states = result
    flat_out, out_fmt = _flatten_symbols(outputs, "the outputs of foreach's body")
    flat_new, _ = _flatten_symbols(new_states, "the states foreach's body returns")
    if len(flat_new) != len(flat_states):
        raise ValueError(f"foreach's body must return as many states as init_states holds ({len(flat_states)}), "
                         f"but it returned {len(flat_new)}")
    graph = Group(flat_out + flat_new)
    inputs = graph.list_inputs()
    own = {v.name: i for i, v in enumerate(data_vars + state_vars)}
    loc = {n: i for i, n in enumerate(inputs)}
    missing = [v.name for v in data_vars + state_vars if v.name not in loc]
    if missing:
        raise ValueError(f"foreach's body does not use {missing}; every sequence and state must reach its outputs")
    internals = graph.get_internals()
    # as MXNet's: the node's inputs are the sequences, the states, then the
    # body's other inputs; the *_locs give the body input each one feeds
    remain_names = [n for n in inputs if n not in own]
    remain = []
    for n in remain_names:
        outer = internals[n]
        if outer.get_children() is not None:
            raise ValueError(f"foreach's body uses `{n}`, which is not a variable; pass it as data or a state")
        remain.append(outer)
    params = {
        "subgraph_sym_json": graph.tojson(),
        "num_args": len(inputs) + 1,  # MXNet counts the subgraph
        "num_outputs": len(flat_out) + len(flat_new),
        "num_out_data": len(flat_out),
        "in_data_locs": tuple(loc[v.name] for v in data_vars),
        "in_state_locs": tuple(loc[v.name] for v in state_vars),
        "remain_locs": tuple(loc[n] for n in remain_names),
    }
    node = compose_op("_foreach", "foreach", flat_data + flat_states + remain, {}, params, name=name)
    outs = [node[i] for i in range(len(flat_out) + len(flat_new))]
    return _regroup(outs[:len(flat_out)], out_fmt), _regroup(outs[len(flat_out):], state_fmt)
