"""Control flow in graphs: ``mx.sym.contrib.foreach``, ``while_loop`` and
``cond``, as MXNet 1.9.1 builds them.

Each body function is called once, on placeholder variables, inside an
``AttrScope(__subgraph_name__=...)``; the nodes it creates form a subgraph
that one ``_foreach``, ``_while_loop`` or ``_cond`` node holds. A body may
read symbols built outside it (a block's input, an earlier layer's output,
a weight): the subgraph is cut there, and those outer symbols become inputs
of the node (MXNet's ``MXSymbolCutSubgraph``; here ``_oxnet.sym_cut_scope``).
"""

import threading

from .. import _oxnet
from ..attribute import AttrScope
from ..ndarray.contrib import _ControlFlowAssertion, _flatten, _python_scalar, _regroup

_SCOPE_KEY = "__subgraph_name__"
_scope_lock = threading.Lock()


def _flatten_symbols(nested, what):
    """The single-output Symbols of ``nested`` (a Symbol or a nested
    list/tuple of them) in order, and its format (as the NDArray form's)."""
    from .symbol import Symbol
    flat, fmt = _flatten(nested, what, Symbol)
    for s in flat:
        if len(s.list_outputs()) != 1:
            raise ValueError(f"{what}: a grouped symbol of {len(s.list_outputs())} outputs; "
                             "pass a list of single-output symbols")
    return flat, fmt


def _unique_scope(name):
    """A scope name not used before, nested in the current body's (as
    MXNet's ``outer$inner0``); ``AttrScope._subgraph_names`` counts the
    names, as in MXNet."""
    outer = AttrScope.current.get(None).get(_SCOPE_KEY, "")
    if outer:
        name = f"{outer}${name}"
    with _scope_lock:
        counts = AttrScope._subgraph_names  # pylint: disable=protected-access
        index = counts[name]
        counts[name] += 1
    return f"{name}{index}"


class _Body:
    """One subgraph: its symbol and, for each of its inputs (in
    ``list_inputs`` order), the symbol feeding it from outside."""

    def __init__(self, name, build):
        """Calls ``build(scope)`` in a fresh scope; it returns the body's
        flat list of output symbols (and anything else, kept as ``extra``)."""
        from .symbol import Group, Symbol
        from . import identity
        scope = _unique_scope(name)
        with AttrScope(**{_SCOPE_KEY: scope}):
            outputs, self.extra = build(scope)
            inputs = set(Group(outputs).list_inputs()) if outputs else set()
            # an output that is an input, or was computed outside, gets an
            # identity node inside the body (MXNet does the same)
            outputs = [identity(o) if o.name in inputs or o.attr(_SCOPE_KEY) != scope else o
                       for o in outputs]
            graph = Group(outputs)
        handle, feeds = _oxnet.sym_cut_scope(graph._h, scope)
        self.symbol = Symbol(handle)
        self.names = self.symbol.list_inputs()
        self.feeds = [Symbol(f) for f in feeds]
        self.num_outputs = len(outputs)

    def json(self):
        """The body as NNVM JSON."""
        return self.symbol.tojson()


def _union_inputs(bodies, placeholders):
    """The node's inputs for ``bodies`` and each body's positions among
    them. A body input named in ``placeholders`` is fed by that symbol;
    the others by what the cut found; inputs of the same name are one."""
    inputs, where, locs = [], {}, []
    for body in bodies:
        body_locs = []
        for name, feed in zip(body.names, body.feeds):
            if name not in where:
                where[name] = len(inputs)
                inputs.append(placeholders.get(name, feed))
            body_locs.append(where[name])
        locs.append(tuple(body_locs))
    return inputs, locs


def _placeholders(scope, prefix, count):
    from .symbol import var
    return [var(f"{scope}_{prefix}{i}") for i in range(count)]


def foreach(body, data, init_states, name="foreach"):
    """The symbolic form of ``mx.nd.contrib.foreach``: ``body(data_slice,
    states) -> (outputs, new_states)`` is called once on placeholder
    symbols and becomes the subgraph of one ``_foreach`` node, which runs it
    for each element of ``data`` along axis 0 (any length, known when the
    graph runs). Returns ``(outputs, states)`` in the structures ``body``
    gave, each output stacked over the steps on a new axis 0.

    The body may use other symbols (a block's weights, an earlier layer's
    output): they become inputs of the node, and gradients flow to them
    through every step."""
    from .symbol import compose_op

    flat_data, data_fmt = _flatten_symbols(data, "foreach's data")
    flat_states, state_fmt = _flatten_symbols(init_states, "foreach's init_states")
    if not flat_data:
        raise ValueError("foreach needs data to iterate over, but data holds no Symbol")

    def build(scope):
        data_vars = _placeholders(scope, "data", len(flat_data))
        state_vars = _placeholders(scope, "state", len(flat_states))
        result = body(_regroup(data_vars, data_fmt), _regroup(state_vars, state_fmt))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError("foreach's body must return (outputs, new_states)")
        outputs, new_states = result
        flat_out, out_fmt = _flatten_symbols(outputs, "the outputs of foreach's body")
        flat_new, _ = _flatten_symbols(new_states, "the states foreach's body returns")
        if len(flat_new) != len(flat_states):
            raise ValueError(f"foreach's body must return as many states as init_states holds "
                             f"({len(flat_states)}), but it returned {len(flat_new)}")
        return flat_out + flat_new, (data_vars, state_vars, len(flat_out), out_fmt)

    graph = _Body(name, build)
    data_vars, state_vars, num_out_data, out_fmt = graph.extra
    loc = {n: i for i, n in enumerate(graph.names)}
    missing = [v.name for v in data_vars + state_vars if v.name not in loc]
    if missing:
        raise _ControlFlowAssertion(f"foreach's body does not use {missing}; every sequence and state must "
                                    "reach its outputs")
    own = {v.name for v in data_vars + state_vars}
    remain = [i for i, n in enumerate(graph.names) if n not in own]
    params = {
        "subgraph_sym_json": graph.json(),
        "num_args": len(graph.names) + 1,  # MXNet counts the subgraph
        "num_outputs": graph.num_outputs,
        "num_out_data": num_out_data,
        "in_data_locs": tuple(loc[v.name] for v in data_vars),
        "in_state_locs": tuple(loc[v.name] for v in state_vars),
        "remain_locs": tuple(remain),
    }
    inputs = flat_data + flat_states + [graph.feeds[i] for i in remain]
    node = compose_op("_foreach", "foreach", inputs, {}, params, name=name)
    outs = [node[i] for i in range(graph.num_outputs)]
    return _regroup(outs[:num_out_data], out_fmt), _regroup(outs[num_out_data:], state_fmt)


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """The symbolic form of ``mx.nd.contrib.while_loop``: ``cond(*loop_vars)``
    (one element, nonzero to go on) and ``func(*loop_vars) -> (step_output,
    new_loop_vars)`` are each called once on placeholder symbols and become
    the two subgraphs of one ``_while_loop`` node, which runs at most
    ``max_iterations`` steps.

    Returns ``(outputs, final_loop_vars)``: each step output stacked over
    the steps on a new axis 0 and padded with zeros to ``max_iterations``
    rows, and the loop variables after the last step, in the structures
    ``func`` and ``loop_vars`` gave. Both functions may use other symbols;
    they become inputs of the node."""
    from .symbol import Symbol, compose_op

    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _python_scalar(max_iterations, int, "max_iterations")
    flat_vars, var_fmt = _flatten_symbols(loop_vars, "while_loop's loop_vars")
    if not flat_vars:
        raise ValueError("loop_vars should contain at least one element")

    var_prefix = _unique_scope(name + "_var")

    def build_cond(scope):
        placeholders = _placeholders(var_prefix, "", len(flat_vars))
        result = cond(*_as_args(_regroup(placeholders, var_fmt)))
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        if len(result.list_outputs()) != 1:
            raise ValueError(f"cond must return one output, but it returned {len(result.list_outputs())}")
        return [result], None

    def build_func(scope):
        placeholders = _placeholders(var_prefix, "", len(flat_vars))
        result = func(*_as_args(_regroup(placeholders, var_fmt)))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError("while_loop's func must return (step_output, new_loop_vars)")
        step_output, new_vars = result
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        flat_out, out_fmt = _flatten_symbols(step_output, "while_loop's step output")
        flat_new, _ = _flatten_symbols(new_vars, "the loop_vars while_loop's func returns")
        if len(flat_new) != len(flat_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop: "
                             f"{len(flat_vars)} went into func, it returned {len(flat_new)}")
        return flat_out + flat_new, (placeholders, len(flat_out), out_fmt)

    cond_g = _Body(name + "_cond", build_cond)
    func_g = _Body(name + "_func", build_func)
    placeholders, num_out_data, out_fmt = func_g.extra
    by_name = {p.name: v for p, v in zip(placeholders, flat_vars)}
    inputs, (cond_locs, func_locs) = _union_inputs([cond_g, func_g], by_name)
    func_pos = {n: i for i, n in enumerate(func_g.names)}
    for i, p in enumerate(placeholders, 1):
        if p.name not in func_pos:
            raise ValueError(f"The {i}-th loop_var doesn't involve into the computation")
    params = {
        "cond_sym_json": cond_g.json(),
        "func_sym_json": func_g.json(),
        "num_args": len(inputs) + 2,  # MXNet counts the two subgraphs
        "num_outputs": func_g.num_outputs,
        "num_out_data": num_out_data,
        "max_iterations": max_iterations,
        "cond_input_locs": cond_locs,
        "func_input_locs": func_locs,
        "func_var_locs": tuple(func_pos[p.name] for p in placeholders),
    }
    node = compose_op("_while_loop", "while_loop", inputs, {}, params, name=name)
    outs = [node[i] for i in range(func_g.num_outputs)]
    return _regroup(outs[:num_out_data], out_fmt), _regroup(outs[num_out_data:], var_fmt)


def _as_args(regrouped):
    """The loop variables as positional arguments (one for a lone symbol)."""
    return regrouped if isinstance(regrouped, list) else [regrouped]


def cond(pred, then_func, else_func, name="cond"):
    """The symbolic form of ``mx.nd.contrib.cond``: ``pred`` (a
    one-element symbol), ``then_func()`` and ``else_func()`` become the
    three subgraphs of one ``_cond`` node, which runs the branch ``pred``
    picks. Both functions take no arguments and use outer symbols, which
    become inputs of the node; they must return the same number of
    outputs. Returns the outputs in the structure ``then_func`` gave."""
    from .symbol import Symbol, compose_op

    if not isinstance(pred, Symbol) or len(pred.list_outputs()) != 1:
        raise ValueError("pred should always be a single output")

    def branch(function):
        def build(scope):
            flat, fmt = _flatten_symbols(function(), "cond outputs")
            return flat, fmt
        return build

    pred_g = _Body(name + "_pred", lambda scope: ([pred], None))
    then_g = _Body(name + "_then", branch(then_func))
    else_g = _Body(name + "_else", branch(else_func))
    if then_g.num_outputs != else_g.num_outputs:
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    inputs, (cond_locs, then_locs, else_locs) = _union_inputs([pred_g, then_g, else_g], {})
    params = {
        "cond_sym_json": pred_g.json(),
        "then_sym_json": then_g.json(),
        "else_sym_json": else_g.json(),
        "num_args": len(inputs) + 3,  # MXNet counts the three subgraphs
        "num_outputs": then_g.num_outputs,
        "cond_input_locs": cond_locs,
        "then_input_locs": then_locs,
        "else_input_locs": else_locs,
    }
    node = compose_op("_cond", "cond", inputs, {}, params, name=name)
    return _regroup([node[i] for i in range(then_g.num_outputs)], then_g.extra)
