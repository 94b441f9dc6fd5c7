//! A minimal JSON reader and string writer: enough for NNVM graph JSON
//! (the SDK depends on nothing but `oxnet-abi`).

use crate::traits::OpResult;

/// A parsed JSON value. Numbers keep their text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Number(String),
    Str(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a non-negative integer.
    pub fn as_usize(&self) -> Option<usize> {
        match self {
            Value::Number(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// The value as JSON text (for messages and scalar attributes).
    pub fn text(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Number(t) => t.clone(),
            Value::Str(s) => quote(s),
            Value::Array(a) => format!("[{}]", a.iter().map(Value::text).collect::<Vec<_>>().join(", ")),
            Value::Object(m) => {
                let parts: Vec<String> =
                    m.iter().map(|(k, v)| format!("{}: {}", quote(k), v.text())).collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }
}

/// `s` as a JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses one JSON document.
pub(crate) fn parse(text: &str) -> OpResult<Value> {
    let mut p = Parser { s: text.as_bytes(), at: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.at != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.at)
    }

    fn ws(&mut self) {
        while self.at < self.s.len() && matches!(self.s[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.at) == Some(&b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> OpResult<Value> {
        self.ws();
        self.depth += 1;
        if self.depth > 128 {
            return Err(self.err("nested too deeply"));
        }
        let v = match self.s.get(self.at) {
            None => Err(self.err("unexpected end")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(Value::Str),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        };
        self.depth -= 1;
        v
    }

    fn word(&mut self, w: &str, v: Value) -> OpResult<Value> {
        if self.s[self.at..].starts_with(w.as_bytes()) {
            self.at += w.len();
            Ok(v)
        } else {
            Err(self.err("unknown word"))
        }
    }

    fn number(&mut self) -> OpResult<Value> {
        let start = self.at;
        while self.at < self.s.len()
            && matches!(self.s[self.at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        {
            self.at += 1;
        }
        let t = std::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.err("bad number"))?;
        if t.parse::<f64>().is_err() {
            return Err(self.err("bad number"));
        }
        Ok(Value::Number(t.to_string()))
    }

    fn hex4(&mut self) -> OpResult<u32> {
        let h = self.s.get(self.at..self.at + 4).ok_or_else(|| self.err("short \\u escape"))?;
        let v = std::str::from_utf8(h)
            .ok()
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("bad \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> OpResult<String> {
        self.at += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = *self.s.get(self.at).ok_or_else(|| self.err("unterminated string"))?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.at).ok_or_else(|| self.err("unterminated escape"))?;
                    self.at += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.s[self.at..].starts_with(b"\\u") {
                                self.at += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                            }
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(self.err("unknown escape")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return Err(self.err("control character in a string")),
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string is not UTF-8"))
    }

    fn array(&mut self) -> OpResult<Value> {
        self.at += 1;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.err("expected `,` or `]`"));
            }
        }
    }

    fn object(&mut self) -> OpResult<Value> {
        self.at += 1;
        let mut members = Vec::new();
        if self.eat(b'}') {
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.s.get(self.at) != Some(&b'"') {
                return Err(self.err("expected a member name"));
            }
            let k = self.string()?;
            if !self.eat(b':') {
                return Err(self.err("expected `:`"));
            }
            members.push((k, self.value()?));
            if self.eat(b'}') {
                return Ok(Value::Object(members));
            }
            if !self.eat(b',') {
                return Err(self.err("expected `,` or `}`"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_values_and_round_trips_strings() {
        let v = parse(r#" {"a": [1, -2.5e3, true, null], "b": "x\"y\\n\u00e9\ud83d\ude00"} "#).unwrap();
        assert_eq!(v.get("a").unwrap().text(), "[1, -2.5e3, true, null]");
        let b = v.get("b").unwrap().as_str().unwrap();
        assert_eq!(b, "x\"y\\n\u{e9}\u{1F600}");
        assert_eq!(parse(&quote(b)).unwrap().as_str(), Some(b));
        assert_eq!(parse(&quote("tab\there\u{1}")).unwrap().as_str(), Some("tab\there\u{1}"));
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "\"open", "tru", "1 2", "[1 2]", "{1: 2}", "-"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse(&deep).unwrap_err().contains("deeply"));
    }
}
