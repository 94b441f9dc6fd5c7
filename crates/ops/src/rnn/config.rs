//! The fused RNN operator's attributes, and the layouts that follow from
//! them: the flat parameter vector (MXNet's, so MXNet-trained weights load)
//! and the workspace the forward pass keeps for the gradient.

use oxnet_core::{AttrValue, Attrs, Error, Result};

/// The recurrence of each layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `h' = relu(Wx·x + bx + Wh·h + bh)`.
    RnnRelu,
    /// `h' = tanh(Wx·x + bx + Wh·h + bh)`.
    RnnTanh,
    /// Gates i, f, g, o: `c' = f·c + i·g`, `h' = o·tanh(c')`.
    Lstm,
    /// Gates r, z, n: `n = tanh(x_n + r·(Wh_n·h + bh_n))`,
    /// `h' = (1 - z)·n + z·h`.
    Gru,
}

impl Mode {
    /// The words of the `mode` attribute, in MXNet's order.
    pub(crate) const NAMES: [&'static str; 4] = ["rnn_relu", "rnn_tanh", "lstm", "gru"];

    fn parse(s: &str) -> Result<Mode> {
        Ok(match s {
            "rnn_relu" => Mode::RnnRelu,
            "rnn_tanh" => Mode::RnnTanh,
            "lstm" => Mode::Lstm,
            "gru" => Mode::Gru,
            _ => {
                return Err(Error::attr(
                    "mode",
                    format!("RNN: unknown mode `{s}`; expected one of rnn_relu, rnn_tanh, lstm, gru"),
                ))
            }
        })
    }

    /// How many gate blocks of `state_size` rows each weight matrix has.
    pub(crate) fn gates(self) -> usize {
        match self {
            Mode::RnnRelu | Mode::RnnTanh => 1,
            Mode::Lstm => 4,
            Mode::Gru => 3,
        }
    }
}

/// The attributes of one RNN call, checked.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub mode: Mode,
    /// Hidden units per layer and direction (H).
    pub state_size: usize,
    pub num_layers: usize,
    /// 1, or 2 when bidirectional.
    pub dirs: usize,
    /// Dropout rate on each layer's output but the last (train mode).
    pub p: f64,
    pub state_outputs: bool,
    /// LSTM only: each step's hidden state is projected to this size (P).
    pub projection: Option<usize>,
    /// LSTM only: the cell state is clipped into this range.
    pub clip: Option<(f64, f64)>,
    /// With `clip`: NaN cell states become the range's minimum.
    pub clip_nan: bool,
    pub use_sequence_length: bool,
}

/// An optional float attribute written as a number or `None`.
fn opt_float(attrs: &Attrs, name: &str) -> Result<Option<f64>> {
    match attrs.get(name)? {
        AttrValue::None => Ok(None),
        AttrValue::Float(v) => Ok(Some(*v)),
        AttrValue::Int(v) => Ok(Some(*v as f64)),
        AttrValue::Str(s) | AttrValue::Raw(s) if s == "None" || s.is_empty() => Ok(None),
        AttrValue::Str(s) | AttrValue::Raw(s) => s
            .trim_matches(|c| c == '\'' || c == '"')
            .parse::<f64>()
            .map(Some)
            .map_err(|_| Error::attr(name, format!("RNN: `{name}` must be a number or None, got `{s}`"))),
        other => Err(Error::attr(name, format!("RNN: `{name}` must be a number or None, got {other:?}"))),
    }
}

impl Config {
    /// Reads and checks the attributes.
    pub(crate) fn from_attrs(attrs: &Attrs) -> Result<Config> {
        let mode = Mode::parse(attrs.str("mode")?)?;
        let positive = |name: &str| -> Result<usize> {
            let v = attrs.int(name)?;
            if v <= 0 {
                return Err(Error::attr(name, format!("RNN: `{name}` must be positive, got {v}")));
            }
            Ok(v as usize)
        };
        let state_size = positive("state_size")?;
        let num_layers = positive("num_layers")?;
        let p = attrs.float("p")?;
        if !(0.0..1.0).contains(&p) {
            return Err(Error::attr("p", format!("RNN: the dropout rate `p` must be in [0, 1), got {p}")));
        }
        let projection = match attrs.opt_int("projection_size")? {
            None => None,
            Some(v) if mode != Mode::Lstm => {
                return Err(Error::attr(
                    "projection_size",
                    format!(
                        "RNN: projection_size={v} is only defined for mode lstm, not {:?}",
                        attrs.str("mode")?
                    ),
                ))
            }
            Some(v) if v <= 0 || v as usize > state_size => {
                return Err(Error::attr(
                    "projection_size",
                    format!("RNN: projection_size must be in [1, state_size={state_size}], got {v}"),
                ))
            }
            Some(v) => Some(v as usize),
        };
        let clip = match (opt_float(attrs, "lstm_state_clip_min")?, opt_float(attrs, "lstm_state_clip_max")?)
        {
            (None, None) => None,
            (Some(lo), Some(hi)) if mode == Mode::Lstm && lo <= hi => Some((lo, hi)),
            (Some(lo), Some(hi)) if mode == Mode::Lstm => {
                return Err(Error::attr(
                    "lstm_state_clip_max",
                    format!("RNN: lstm_state_clip_max ({hi}) must be at least lstm_state_clip_min ({lo})"),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(Error::attr(
                    "lstm_state_clip_min",
                    "RNN: state clipping is only defined for mode lstm",
                ))
            }
            _ => {
                return Err(Error::attr(
                    "lstm_state_clip_min",
                    "RNN: lstm_state_clip_min and lstm_state_clip_max must be given together",
                ))
            }
        };
        Ok(Config {
            mode,
            state_size,
            num_layers,
            dirs: if attrs.bool("bidirectional")? { 2 } else { 1 },
            p,
            state_outputs: attrs.bool("state_outputs")?,
            projection,
            clip,
            clip_nan: attrs.bool("lstm_state_clip_nan")?,
            use_sequence_length: attrs.bool("use_sequence_length")?,
        })
    }

    /// Gate rows of each weight matrix: gates × H.
    pub(crate) fn gate_rows(&self) -> usize {
        self.mode.gates() * self.state_size
    }

    /// The size of each step's output per direction (and of the hidden
    /// state): P with a projection, else H.
    pub(crate) fn out_size(&self) -> usize {
        self.projection.unwrap_or(self.state_size)
    }

    /// The input size of layer `l` for data of `input_size` features.
    pub(crate) fn layer_input(&self, l: usize, input_size: usize) -> usize {
        if l == 0 {
            input_size
        } else {
            self.dirs * self.out_size()
        }
    }

    /// Where each matrix of (layer, direction) starts in the parameter
    /// vector, and the vector's length.
    pub(crate) fn param_layout(&self, input_size: usize) -> ParamLayout {
        let (g, h, o) = (self.gate_rows(), self.state_size, self.out_size());
        let mut at = 0;
        let mut blocks = Vec::with_capacity(self.num_layers * self.dirs);
        // all weights first: per layer, per direction, i2h then h2h then h2r
        for l in 0..self.num_layers {
            let ni = self.layer_input(l, input_size);
            for _ in 0..self.dirs {
                let wx = at;
                at += g * ni;
                let wh = at;
                at += g * o;
                let wr = at;
                if self.projection.is_some() {
                    at += o * h;
                }
                blocks.push(ParamBlock { wx, wh, wr, bx: 0, bh: 0 });
            }
        }
        // then the biases in the same order, i2h then h2h
        for b in &mut blocks {
            b.bx = at;
            b.bh = at + g;
            at += 2 * g;
        }
        ParamLayout { blocks, len: at }
    }

    /// The names of the inputs.
    pub(crate) fn arguments(&self) -> Vec<String> {
        let mut names = vec!["data", "parameters", "state"];
        if self.mode == Mode::Lstm {
            names.push("state_cell");
        }
        if self.use_sequence_length {
            names.push("sequence_length");
        }
        names.into_iter().map(String::from).collect()
    }

    /// The input index of `sequence_length`, when used.
    pub(crate) fn sequence_length_input(&self) -> Option<usize> {
        self.use_sequence_length.then_some(if self.mode == Mode::Lstm { 4 } else { 3 })
    }

    /// The names of the outputs, the workspace for the gradient last.
    pub(crate) fn outputs(&self) -> Vec<String> {
        let mut names = vec!["output"];
        if self.state_outputs {
            names.push("state_output");
            if self.mode == Mode::Lstm {
                names.push("statecell_output");
            }
        }
        names.push("workspace");
        names.into_iter().map(String::from).collect()
    }

    /// How many outputs callers see.
    pub(crate) fn visible_outputs(&self) -> usize {
        match (self.state_outputs, self.mode) {
            (false, _) => 1,
            (true, Mode::Lstm) => 3,
            (true, _) => 2,
        }
    }

    /// The dropout between layers is active (p > 0 and more than one layer).
    pub(crate) fn has_dropout(&self) -> bool {
        self.p > 0.0 && self.num_layers > 1
    }

    /// The workspace layout for sequences of `steps` × `batch`.
    pub(crate) fn workspace(&self, steps: usize, batch: usize) -> Workspace {
        let rows = steps * batch;
        let (g, h) = (self.gate_rows(), self.state_size);
        let mut at = 0;
        let mut take = |n: usize| {
            let r = at;
            at += n;
            r
        };
        let mut blocks = Vec::with_capacity(self.num_layers * self.dirs);
        for _ in 0..self.num_layers * self.dirs {
            let gates = take(rows * g);
            let cells = if self.mode == Mode::Lstm { take(rows * h) } else { 0 };
            let extra = if self.mode == Mode::Gru || self.projection.is_some() { take(rows * h) } else { 0 };
            blocks.push(WorkBlock { gates, cells, extra });
        }
        let width = self.dirs * self.out_size();
        let mut layers = Vec::with_capacity(self.num_layers.saturating_sub(1));
        for _ in 1..self.num_layers {
            let output = take(rows * width);
            let (mask, dropped) =
                if self.has_dropout() { (take(rows * width), take(rows * width)) } else { (0, 0) };
            layers.push(LayerWork { output, mask, dropped });
        }
        Workspace { blocks, layers, len: at.max(1) }
    }
}

/// Offsets of one (layer, direction)'s matrices in the parameter vector.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParamBlock {
    /// Input-to-hidden weights, (gates·H) × layer input.
    pub wx: usize,
    /// Hidden-to-hidden weights, (gates·H) × out_size.
    pub wh: usize,
    /// The projection (LSTM with projection_size), P × H.
    pub wr: usize,
    /// Input-to-hidden bias, gates·H.
    pub bx: usize,
    /// Hidden-to-hidden bias, gates·H.
    pub bh: usize,
}

/// The parameter vector's layout: blocks indexed by layer·dirs + direction.
#[derive(Clone, Debug)]
pub(crate) struct ParamLayout {
    pub blocks: Vec<ParamBlock>,
    pub len: usize,
}

/// What the forward pass keeps of one (layer, direction), each a table of
/// steps·batch rows (row `t·batch + n`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkBlock {
    /// The gates after their activations (gates·H per row); for the plain
    /// RNN modes the step's hidden state itself.
    pub gates: usize,
    /// LSTM: the cell state after each step (H per row).
    pub cells: usize,
    /// GRU: `Wh_n·h + bh_n` of each step; LSTM with projection: the
    /// hidden state before the projection (H per row).
    pub extra: usize,
}

/// What the forward pass keeps between layers `l` and `l + 1`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayerWork {
    /// Layer `l`'s output (steps·batch rows of dirs·out_size).
    pub output: usize,
    /// The dropout's scale per element (0 or 1/(1-p)), when active.
    pub mask: usize,
    /// Layer `l + 1`'s input: the output times the mask, when active.
    pub dropped: usize,
}

/// The workspace output's layout.
#[derive(Clone, Debug)]
pub(crate) struct Workspace {
    /// Per (layer, direction).
    pub blocks: Vec<WorkBlock>,
    /// Per layer but the last.
    pub layers: Vec<LayerWork>,
    /// Its length (at least 1).
    pub len: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: Mode, layers: usize, dirs: usize, projection: Option<usize>) -> Config {
        Config {
            mode,
            state_size: 5,
            num_layers: layers,
            dirs,
            p: 0.0,
            state_outputs: false,
            projection,
            clip: None,
            clip_nan: false,
            use_sequence_length: false,
        }
    }

    #[test]
    fn parameter_count_is_mxnets() {
        // MXNet's GetRnnParamSize: (I + H + 2)·gH·D first, (D·H + H + 2)·gH·D after
        for (mode, g) in [(Mode::RnnTanh, 1), (Mode::Lstm, 4), (Mode::Gru, 3)] {
            for dirs in [1, 2] {
                let c = config(mode, 3, dirs, None);
                let (i, h) = (7, 5);
                let size = g * h * dirs;
                let expected = (i + h + 2) * size + 2 * (dirs * h + h + 2) * size;
                assert_eq!(c.param_layout(i).len, expected);
            }
        }
        // with a projection: (I + P + 2)·4H·D, (D·P + P + 2)·4H·D, + P·H·L·D
        let c = config(Mode::Lstm, 2, 2, Some(3));
        let (i, h, p, size) = (7, 5, 3, 4 * 5 * 2);
        assert_eq!(c.param_layout(i).len, (i + p + 2) * size + (2 * p + p + 2) * size + p * h * 2 * 2);
    }

    #[test]
    fn weights_come_before_biases_layer_by_layer() {
        let c = config(Mode::Gru, 2, 2, None);
        let lay = c.param_layout(4);
        let b = &lay.blocks;
        assert_eq!((b[0].wx, b[0].wh), (0, 15 * 4));
        assert_eq!(b[1].wx, 15 * 4 + 15 * 5);
        assert_eq!(b[2].wx, 2 * (15 * 4 + 15 * 5));
        let weights = 2 * (15 * 4 + 15 * 5) + 2 * (15 * 10 + 15 * 5);
        assert_eq!(
            (b[0].bx, b[0].bh, b[1].bx, b[3].bh),
            (weights, weights + 15, weights + 30, weights + 105)
        );
        assert_eq!(lay.len, weights + 120);
    }
}
