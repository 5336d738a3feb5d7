//! A tiny JSON tree for the suite generators, printed with short scalar
//! arrays on one line so graph files stay readable.

#[derive(Clone, Debug)]
pub enum J {
    Int(i64),
    Num(f64),
    Bool(bool),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

pub fn s(v: &str) -> J {
    J::Str(v.to_string())
}

pub fn strs<S: AsRef<str>>(v: &[S]) -> J {
    J::Arr(v.iter().map(|x| s(x.as_ref())).collect())
}

pub fn ints(v: &[i64]) -> J {
    J::Arr(v.iter().map(|&x| J::Int(x)).collect())
}

impl J {
    pub fn is_scalar(&self) -> bool {
        matches!(self, J::Int(_) | J::Num(_) | J::Bool(_) | J::Str(_))
    }

    pub fn print(&self, indent: usize, out: &mut String) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            J::Int(i) => out.push_str(&i.to_string()),
            J::Num(x) => out.push_str(&format!("{x:?}")),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Str(v) => out.push_str(&serde_json::to_string(v).expect("string")),
            J::Arr(v) if v.iter().all(J::is_scalar) => {
                out.push('[');
                for (k, x) in v.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    x.print(0, out);
                }
                out.push(']');
            }
            J::Arr(v) => {
                out.push_str("[\n");
                for (k, x) in v.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    x.print(indent + 1, out);
                    out.push_str(if k + 1 < v.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push(']');
            }
            J::Obj(kv) if kv.is_empty() => out.push_str("{}"),
            J::Obj(kv) => {
                out.push_str("{\n");
                for (k, (key, x)) in kv.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    out.push_str(&serde_json::to_string(key).expect("key"));
                    out.push_str(": ");
                    x.print(indent + 1, out);
                    out.push_str(if k + 1 < kv.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(indent));
                out.push('}');
            }
        }
    }
}
