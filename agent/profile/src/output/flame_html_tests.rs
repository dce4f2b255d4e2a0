use super::*;

/// Minimal JSON value and parser, enough to read the embedded data back.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn get(&self, key: &str) -> &J {
        match self {
            J::Obj(kv) => &kv.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no key {key}")).1,
            _ => panic!("not an object"),
        }
    }
    pub fn arr(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            other => panic!("not an array: {other:?}"),
        }
    }
    pub fn num(&self) -> f64 {
        match self {
            J::Num(n) => *n,
            other => panic!("not a number: {other:?}"),
        }
    }
    pub fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
}

pub fn parse_json(s: &str) -> Result<J, String> {
    let b: Vec<char> = s.chars().collect();
    let mut p = 0;
    let v = value(&b, &mut p)?;
    ws(&b, &mut p);
    if p != b.len() {
        return Err(format!("trailing data at {p}"));
    }
    Ok(v)
}

fn ws(b: &[char], p: &mut usize) {
    while *p < b.len() && b[*p].is_whitespace() {
        *p += 1;
    }
}

fn value(b: &[char], p: &mut usize) -> Result<J, String> {
    ws(b, p);
    let c = *b.get(*p).ok_or("unexpected end")?;
    match c {
        '{' | '[' => {
            let close = if c == '{' { '}' } else { ']' };
            *p += 1;
            let mut arr = Vec::new();
            let mut obj = Vec::new();
            ws(b, p);
            if b.get(*p) == Some(&close) {
                *p += 1;
            } else {
                loop {
                    if c == '{' {
                        ws(b, p);
                        let J::Str(k) = value(b, p)? else {
                            return Err("key".into());
                        };
                        ws(b, p);
                        if b.get(*p) != Some(&':') {
                            return Err(format!("expected : at {p}"));
                        }
                        *p += 1;
                        obj.push((k, value(b, p)?));
                    } else {
                        arr.push(value(b, p)?);
                    }
                    ws(b, p);
                    match b.get(*p) {
                        Some(',') => *p += 1,
                        Some(x) if *x == close => {
                            *p += 1;
                            break;
                        }
                        _ => return Err(format!("expected , or {close} at {p}")),
                    }
                }
            }
            Ok(if c == '{' { J::Obj(obj) } else { J::Arr(arr) })
        }
        '"' => {
            *p += 1;
            let mut s = String::new();
            loop {
                let c = *b.get(*p).ok_or("unterminated string")?;
                *p += 1;
                match c {
                    '"' => break,
                    '\\' => {
                        let e = *b.get(*p).ok_or("bad escape")?;
                        *p += 1;
                        match e {
                            'n' => s.push('\n'),
                            't' => s.push('\t'),
                            'r' => s.push('\r'),
                            'u' => {
                                let h: String = b[*p..*p + 4].iter().collect();
                                *p += 4;
                                let cp = u32::from_str_radix(&h, 16).map_err(|e| e.to_string())?;
                                s.push(char::from_u32(cp).ok_or("bad code point")?);
                            }
                            '"' | '\\' | '/' => s.push(e),
                            _ => return Err(format!("bad escape \\{e}")),
                        }
                    }
                    c if (c as u32) < 0x20 => return Err("raw control char in string".into()),
                    c => s.push(c),
                }
            }
            Ok(J::Str(s))
        }
        't' | 'f' | 'n' => {
            for (word, v) in [("true", J::Bool(true)), ("false", J::Bool(false)), ("null", J::Null)] {
                if b[*p..].iter().take(word.len()).copied().eq(word.chars()) {
                    *p += word.len();
                    return Ok(v);
                }
            }
            Err(format!("bad literal at {p}"))
        }
        _ => {
            let start = *p;
            while *p < b.len() && (b[*p].is_ascii_digit() || "+-.eE".contains(b[*p])) {
                *p += 1;
            }
            let t: String = b[start..*p].iter().collect();
            t.parse().map(J::Num).map_err(|_| format!("bad number `{t}` at {start}"))
        }
    }
}

fn embedded_json(html: &str) -> &str {
    let start = html.find(r#"<script type="application/json" id="fg-data">"#).unwrap();
    let body = &html[start..];
    let open = body.find('>').unwrap() + 1;
    let close = body.find("</script>").unwrap();
    &body[open..close]
}

const EVIL: &str = "Evil.<init></script><script>alert(\"x\")</script>$&'";

fn tree() -> Cct {
    let mut c = Cct::new(vec!["cycles".into(), "instructions".into()]);
    c.add_stack(&["Main.main", EVIL, "memcpy"], 30, 300, &[300, 100]);
    c.add_stack(&["Main.main", "os::javaTimeNanos"], 10, 100, &[50, 50]);
    c.add_stack(&["[GC]"], 5, 50, &[20, 0]);
    c
}

#[test]
fn embedded_json_parses_and_keeps_names() {
    let html = flame_html(&tree(), &HtmlOptions { title: "T <b>&".into(), ..Default::default() });
    let j = parse_json(embedded_json(&html)).unwrap();
    assert_eq!(j.get("title").str(), "T <b>&");
    assert_eq!(j.get("unit").str(), "samples");
    assert_eq!(j.get("total").num(), 45.0);
    let counters: Vec<&str> = j.get("counters").arr().iter().map(J::str).collect();
    assert_eq!(counters, ["cycles", "instructions"]);
    assert_eq!(j.get("cpi").arr().iter().map(J::num).collect::<Vec<_>>(), [0.0, 1.0]);
    let names: Vec<&str> = j.get("names").arr().iter().map(J::str).collect();
    assert!(names.contains(&EVIL), "{names:?}");
    let stride = j.get("stride").num() as usize;
    assert_eq!(stride, NODE_FIELDS + 2);
    let nodes: Vec<f64> = j.get("nodes").arr().iter().map(J::num).collect();
    assert_eq!(nodes.len(), 6 * stride);
    // Self values add up to the total; depths start at the root.
    let self_sum: f64 = nodes.chunks(stride).map(|n| n[3]).sum();
    assert_eq!(self_sum, 45.0);
    assert_eq!(nodes[1], 0.0);
    let fam = j.get("fam").arr();
    let gc = names.iter().position(|n| *n == "[GC]").unwrap();
    assert_eq!(fam[gc].num() as usize, FrameFamily::Pseudo.index());
    let cpp = names.iter().position(|n| *n == "os::javaTimeNanos").unwrap();
    assert_eq!(fam[cpp].num() as usize, FrameFamily::Cpp.index());
}

#[test]
fn names_cannot_break_out_of_the_page() {
    let html = flame_html(&tree(), &HtmlOptions { title: EVIL.into(), ..Default::default() });
    // Exactly our two script elements (data + code) and their closing tags.
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("alert(\"x\")</"));
    assert!(html.contains("<title>Evil.&lt;init&gt;&lt;/script&gt;"));
    assert!(!html.contains("http://") && !html.contains("https://"), "no external resources");
}

#[test]
fn weight_mode_and_determinism() {
    let o = HtmlOptions { by: Measure::Weight, ..Default::default() };
    let a = flame_html(&tree(), &o);
    assert_eq!(a, flame_html(&tree(), &o));
    let j = parse_json(embedded_json(&a)).unwrap();
    assert_eq!(j.get("unit").str(), "weight");
    assert_eq!(j.get("total").num(), 450.0);
}

#[test]
fn no_cpi_without_both_counters() {
    let mut c = Cct::new(vec!["task-clock".into(), "page-faults".into()]);
    c.add_stack(&["a"], 1, 1, &[5, 1]);
    let j = parse_json(&flame_json(&c, &HtmlOptions::default())).unwrap();
    assert_eq!(j.get("cpi"), &J::Null);
}

#[test]
fn large_trees_are_pruned_and_say_so() {
    // ~200k distinct frames: 400 callers x 500 callees, 1 sample each, plus one hot path.
    let mut c = Cct::default();
    for i in 0..400 {
        let a = format!("pkg.C{i}.m");
        for k in 0..500 {
            let b = format!("pkg.D{k}.n");
            c.add_stack(&["Main.main", a.as_str(), b.as_str()], 1, 1, &[]);
        }
    }
    c.add_stack(&["Main.main", "Hot.path"], 1_000_000, 1, &[]);
    assert!(c.nodes.len() > 200_000);
    let opts = HtmlOptions { max_nodes: 50_000, ..Default::default() };
    let t = std::time::Instant::now();
    let html = flame_html(&c, &opts);
    assert!(t.elapsed().as_secs() < 20);
    let j = parse_json(embedded_json(&html)).unwrap();
    let stride = j.get("stride").num() as usize;
    let n = j.get("nodes").arr().len() / stride;
    assert!(n <= 50_000 && n > 3, "{n} nodes kept");
    let pruned = j.get("pruned");
    assert_eq!(pruned.get("frames").num(), 200_000.0);
    assert!(html.contains("frames with fewer than"), "page must mention pruning");
    let self_sum: f64 = j.get("nodes").arr().chunks(stride).map(|n| n[3].num()).sum();
    assert_eq!(self_sum, 1_200_000.0);
}

#[test]
fn empty_tree_renders() {
    let html = flame_html(&Cct::default(), &HtmlOptions::default());
    let j = parse_json(embedded_json(&html)).unwrap();
    assert_eq!(j.get("total").num(), 0.0);
}

/// A recording's tree: `Main.main` (interpreted) calls `Main.work` (JIT compiled here, inlined
/// there), which calls into `libc` (native) and the kernel.
fn kinds_tree() -> Cct {
    use crate::model::*;
    let mut rec = Recording::default();
    rec.add_thread(ThreadInfo { os_tid: 1, java_id: None, name: "main".into(), is_java: true, is_virtual: false });
    let m = |rec: &mut Recording, info: MethodInfo| rec.methods.intern(info);
    let main = m(&mut rec, MethodInfo::java("Main", "main", "()V"));
    let work = m(&mut rec, MethodInfo::java("Main", "work", "()V"));
    let other = m(&mut rec, MethodInfo::java("Main", "other", "()V"));
    let write = m(&mut rec, MethodInfo::native("write"));
    let kernel = m(&mut rec, MethodInfo::native("[kernel]"));
    let f = |method, kind| Frame { method, bci: -1, line: -1, kind };
    let stacks: [Vec<Frame>; 2] = [
        vec![
            f(kernel, FrameKind::Kernel),
            f(write, FrameKind::Native),
            f(work, FrameKind::JitCompiled),
            f(main, FrameKind::Interpreted),
        ],
        vec![f(work, FrameKind::Inlined), f(other, FrameKind::JitCompiled), f(main, FrameKind::Interpreted)],
    ];
    for st in stacks {
        rec.samples.push(Sample::of_stack(st.into()));
    }
    Cct::from_recording(&rec, false)
}

#[test]
fn recorded_frame_kinds_colour_the_frames() {
    let j = parse_json(&flame_json(&kinds_tree(), &HtmlOptions::default())).unwrap();
    let names: Vec<&str> = j.get("names").arr().iter().map(J::str).collect();
    let fams: Vec<&str> =
        j.get("fam").arr().iter().map(|f| j.get("families").arr()[f.num() as usize].get("name").str()).collect();
    let got: Vec<(&str, &str)> = names.into_iter().zip(fams).collect();
    // One entry per name and family: Main.work is JIT compiled on one path, inlined on the other.
    assert_eq!(
        got,
        [
            ("all", "pseudo-frame"),
            ("Main.main", "interpreted"),
            ("Main.other", "JIT compiled"),
            ("Main.work", "inlined"),
            ("Main.work", "JIT compiled"),
            ("write", "native"),
            ("[kernel]", "kernel"),
        ]
    );
    // The palette travels with the data, so the page and the SVG colour alike.
    let kernel = &j.get("families").arr()[FrameFamily::Kernel.index()];
    assert_eq!(kernel.get("base").arr().iter().map(J::num).collect::<Vec<_>>(), [230.0, 140.0, 20.0]);
}

#[test]
fn a_differential_page_carries_a_at_every_frame() {
    use crate::analysis::diff::{diff, DiffOptions};
    let a = crate::load::parse_collapsed("main;run;alpha 50\nmain;run;common 50\n").unwrap();
    let b = crate::load::parse_collapsed("main;run;beta 160\nmain;run;common 40\n").unwrap();
    let d = diff(a, b, &DiffOptions::default());
    let html = flame_html_diff(&d.b_tree, &d.baseline, &HtmlOptions { by: Measure::Weight, ..Default::default() });
    let j = parse_json(embedded_json(&html)).unwrap();
    assert_eq!(j.get("diff").get("aTotal").num(), 100.0);
    assert_eq!(j.get("unit").str(), "samples", "a differential graph compares samples");
    let stride = j.get("stride").num() as usize;
    assert_eq!(stride, NODE_FIELDS + 2);
    let names: Vec<&str> = j.get("names").arr().iter().map(J::str).collect();
    // Per node: name, depth, B total, B self, A total, A self.
    let rows: Vec<(&str, [f64; 4])> = j
        .get("nodes")
        .arr()
        .chunks(stride)
        .map(|n| (names[n[0].num() as usize], [n[2].num(), n[3].num(), n[4].num(), n[5].num()]))
        .collect();
    assert_eq!(
        rows,
        [
            ("all", [200.0, 0.0, 100.0, 0.0]),
            ("main", [200.0, 0.0, 100.0, 0.0]),
            ("run", [200.0, 0.0, 100.0, 0.0]),
            ("beta", [160.0, 160.0, 0.0, 0.0]),
            ("common", [40.0, 40.0, 50.0, 50.0]),
        ]
    );
    assert!(html.contains("<summary>Only in A, not drawn: 1 frames (50.00% of A's samples in the largest)</summary><ul><li>main &gt; run &gt; alpha (50.00% of A)</li></ul>"), "{html}");
}
