//! What the sampled data addresses touched (`data`; Inoue & Nakatani §4.3 and appendix (b)):
//! flat tables by the object's class, by field, or by space, each row with the usual counter
//! columns, the space its samples were in, and the methods that touched it.

use std::collections::HashMap;
use std::fmt::Write;

use super::stacks::StackTable;
use crate::model::{DataTarget, MethodIdx, Recording, Sample, Space, VmComponent};
use crate::text::{group, pct};

/// What a data table groups samples by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataBy {
    Class,
    Field,
    Space,
}

impl DataBy {
    pub fn parse(s: &str) -> Result<DataBy, String> {
        match s {
            "class" => Ok(DataBy::Class),
            "field" => Ok(DataBy::Field),
            "space" => Ok(DataBy::Space),
            _ => Err(format!("--by {s}: give class, field or space")),
        }
    }

    fn noun(self) -> &'static str {
        match self {
            DataBy::Class => "classes",
            DataBy::Field => "fields",
            DataBy::Space => "spaces",
        }
    }

    /// The row a target falls in: its class, its field (`Declaring.name`; an array's element
    /// as `int[] element`), its space; addresses outside the heap or not identified are rows
    /// of their own in parentheses, and so are the interpreter's own accesses
    /// ([`interpreter_internal`]). `component` is the sample's.
    pub fn key(self, d: &DataTarget, component: VmComponent) -> String {
        self.key_of(d.space, d.class.as_deref(), d.field.as_deref(), component)
    }

    /// [`DataBy::key`] of a target's parts.
    pub fn key_of(self, space: Space, class: Option<&str>, field: Option<&str>, component: VmComponent) -> String {
        if self == DataBy::Space {
            return space.name().to_string();
        }
        if interpreter_internal(component, space) {
            return INTERPRETER_INTERNAL.to_string();
        }
        let Some(class) = class else {
            return match (self, field) {
                // A stack address's frame.
                (DataBy::Field, Some(f)) if !space.in_heap() => format!("({}) {f}", space.name()),
                _ if space.in_heap() => "(not identified)".into(),
                _ => format!("({})", space.name()),
            };
        };
        match (self, field) {
            (DataBy::Class, _) | (_, None) => class.to_string(),
            (_, Some("[]")) => format!("{class} element"),
            (_, Some(f)) if f.starts_with('<') => format!("{class} {f}"),
            (_, Some(f)) => f.to_string(),
        }
    }
}

/// The class and field tables' row of [`interpreter_internal`] accesses.
pub const INTERPRETER_INTERNAL: &str = "(interpreter internal)";

/// Whether a sample's access was the interpreter's own rather than the interpreted method's:
/// taken in the interpreter (its templates, or the runtime it calls) and outside the heap. The
/// interpreter reads the bytecode (metadata), the constant pool and cache (metadata), the
/// method's locals and expression stack (its frame, on the thread's stack) and the thread;
/// compiled code keeps those in registers or leaves them out, so charging them to the method's
/// rows led `--by class` with `(native)`, `(stack)` and `(metadata)` for any method that ran
/// interpreted. Its heap accesses are the bytecode's own (a field, an array
/// element) and stay in the object's row.
pub fn interpreter_internal(component: VmComponent, space: Space) -> bool {
    component == VmComponent::Interpreter && !space.in_heap()
}

/// What the `space` column's names mean, printed above the class and field tables.
pub const SPACE_LEGEND: &[&str] = &[
    "space: where the address lies. eden, survivor, old, humongous, archive, heap: the Java heap (the object is",
    "  named by its class); stack: a thread's stack (the frame holding it); metadata: class metadata (Klass,",
    "  bytecode, constant pools, the CDS archive); code_cache: compiled code, the interpreter, stubs; thread: the",
    "  sampled thread's own JavaThread; native: other native memory (the VM's, libraries').",
    "(interpreter internal): the interpreter's accesses outside the heap for a method it ran (its bytecode,",
    "  constant pool, locals and frame), set apart from the method's objects.",
];

/// Methods listed per row.
const TOP_METHODS: usize = 3;

/// One row: samples, their weight and counter sums, spaces and the methods they were taken in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataRow {
    pub key: String,
    pub samples: u64,
    /// The sampling event summed over the row's samples (ns or event counts).
    pub weight: u64,
    pub counters: Vec<u64>,
    /// Samples per [`Space`] code.
    pub spaces: [u64; 12],
    /// Samples per leaf method (the method whose instruction touched the address).
    pub methods: Vec<(MethodIdx, u64)>,
}

/// The three tables of a recording's samples with a data target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataTallies {
    pub by_class: Vec<DataRow>,
    pub by_field: Vec<DataRow>,
    pub by_space: Vec<DataRow>,
    /// Samples with a data target, in the heap, identified.
    pub samples: u64,
    pub heap: u64,
    pub identified: u64,
}

/// Rows being summed, by table and key.
struct Tables {
    maps: [HashMap<String, DataRow>; 3],
    counters: usize,
    t: DataTallies,
}

impl Tables {
    fn new(counters: usize) -> Tables {
        Tables { maps: Default::default(), counters, t: DataTallies::default() }
    }

    /// Adds `samples` samples that touched (`space`, `class`, `field`) in method `leaf`, in
    /// `component`.
    #[allow(clippy::too_many_arguments, reason = "one call per source: samples and stack entries")]
    fn add(
        &mut self,
        space: Space,
        class: Option<&str>,
        field: Option<&str>,
        component: VmComponent,
        leaf: Option<MethodIdx>,
        samples: u64,
        weight: u64,
        counters: &[u64],
    ) {
        self.t.samples += samples;
        if space.in_heap() {
            self.t.heap += samples;
            if class.is_some() {
                self.t.identified += samples;
            }
        }
        let n = self.counters;
        for (map, by) in self.maps.iter_mut().zip([DataBy::Class, DataBy::Field, DataBy::Space]) {
            let key = by.key_of(space, class, field, component);
            let row =
                map.entry(key.clone()).or_insert_with(|| DataRow { key, counters: vec![0; n], ..Default::default() });
            row.samples = row.samples.saturating_add(samples);
            row.weight = row.weight.saturating_add(weight);
            for (acc, v) in row.counters.iter_mut().zip(counters) {
                *acc = acc.saturating_add(*v);
            }
            row.spaces[space as usize] += samples;
            if let Some(m) = leaf {
                match row.methods.iter_mut().find(|e| e.0 == m) {
                    Some(e) => e.1 += samples,
                    None => row.methods.push((m, samples)),
                }
            }
        }
    }

    /// The rows heaviest first (then by key), their methods likewise.
    fn finish(self) -> DataTallies {
        let mut t = self.t;
        let [class, field, space] = self.maps.map(|m| {
            let mut rows: Vec<DataRow> = m.into_values().collect();
            for r in &mut rows {
                r.methods.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            }
            rows.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.key.cmp(&b.key)));
            rows
        });
        t.by_class = class;
        t.by_field = field;
        t.by_space = space;
        t
    }
}

impl DataTallies {
    /// The tables of a recording's samples (`hpm report`).
    pub fn of(rec: &Recording) -> DataTallies {
        let mut tables = Tables::new(rec.counters.len());
        for s in &rec.samples {
            let Some(d) = s.data.as_deref() else { continue };
            let (class, field) = (d.class.as_deref(), d.field.as_deref());
            tables.add(d.space, class, field, s.component, leaf_method(s), s.count(), s.weight, &s.counters);
        }
        tables.finish()
    }

    /// The tables of a stack table's entries (the JSON output, which the agent writes from
    /// its stack table, its samples long gone).
    pub fn from_stacks(stacks: &StackTable, counters: usize) -> DataTallies {
        let mut tables = Tables::new(counters);
        for e in &stacks.entries {
            let Some(d) = &e.key.data else { continue };
            let leaf = e.key.frames.first().map(|f| f.0);
            let (class, field, component) = (d.class.as_deref(), d.field.as_deref(), e.key.component);
            tables.add(d.space, class, field, component, leaf, e.samples, e.weight, &e.counters);
        }
        tables.finish()
    }

    pub fn rows(&self, by: DataBy) -> &[DataRow] {
        match by {
            DataBy::Class => &self.by_class,
            DataBy::Field => &self.by_field,
            DataBy::Space => &self.by_space,
        }
    }
}

/// The calling context tree with each sample under a root frame of what its data address
/// touched (`hpm flamegraph --by class`): `[class demo.Node]`, `[field ...]`, `[space old]`;
/// samples without a data address under `[no data address]`.
pub fn cct_by(rec: &Recording, by: DataBy) -> crate::cct::Cct {
    let mut cct = crate::cct::Cct::with_limit(rec.counters.clone(), crate::cct::split_tree_limit(rec));
    let label = by_label(by);
    // Samples of one root and one stack are added together: the work follows the distinct
    // (root, stack) pairs, not samples times depth.
    // (root, stack address, length) -> (first sample, samples, weight, counters).
    type Group = (usize, u64, u64, Vec<u64>);
    let mut groups: HashMap<(String, usize, usize), Group> = HashMap::new();
    let mut order = Vec::new();
    for (i, s) in rec.samples.iter().enumerate() {
        let root = match s.data.as_deref() {
            Some(d) => match by.key(d, s.component) {
                k if k.starts_with('(') => format!("[{}]", k.trim_start_matches('(').trim_end_matches(')')),
                k => format!("[{label} {k}]"),
            },
            None => "[no data address]".to_string(),
        };
        let key = (root, s.stack.as_ptr() as usize, s.stack.len());
        let g = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (i, 0, 0, Vec::new())
        });
        g.1 += s.repeats();
        g.2 = g.2.saturating_add(s.weight);
        crate::model::add_counters(&mut g.3, &s.counters);
    }
    let mut names = crate::cct::MethodNames::default();
    for key in order {
        let (first, samples, weight, counters) = &groups[&key];
        cct.add_sample_at(rec, &rec.samples[*first], Some(&key.0), *samples, *weight, counters, &mut names);
    }
    cct
}

/// The leaf frame's method: the one whose code touched the address.
/// The sample's innermost Java frame (a uprobe's sample is in the JVM's code, called from
/// the Java method that locks), else its innermost frame.
fn leaf_method(s: &Sample) -> Option<MethodIdx> {
    s.stack.iter().find(|f| f.kind.is_java()).or(s.stack.first()).map(|f| f.method)
}

/// Appends the table of `by` (its top `top` rows) to `out`; nothing when the recording has no
/// sample with a data target.
pub fn data_table(out: &mut String, rec: &Recording, t: &DataTallies, by: DataBy, top: usize) {
    if t.samples == 0 {
        return;
    }
    let rows = t.rows(by);
    let _ =
        write!(out, "\n== Data: top {top} {} by samples ({} samples with a data address", by.noun(), group(t.samples));
    if t.heap > 0 {
        let _ = write!(
            out,
            "; {} of {} in the heap identified, {}",
            group(t.identified),
            group(t.heap),
            pct(t.identified, t.heap).trim()
        );
    }
    out.push_str(") ==\n");
    let totals: Vec<u64> = (0..rec.counters.len()).map(|i| rows.iter().map(|r| r.counters[i]).sum()).collect();
    let mut h = format!("{:>8} {:>10}", "samples%", "samples");
    for c in &rec.counters {
        let _ = write!(h, " {:>9}", format!("{c}%"));
    }
    if by != DataBy::Space {
        let _ = write!(h, "  {:<15}", "space");
    }
    let width = rows.iter().take(top).map(|r| r.key.len()).max().unwrap_or(0).clamp(8, 60);
    if by != DataBy::Space {
        for l in SPACE_LEGEND {
            let _ = writeln!(out, "{l}");
        }
    }
    let _ = writeln!(out, "{h}  {:<width$}  top methods", by_label(by));
    for r in rows.iter().take(top) {
        let mut l = format!("{:>8} {:>10}", pct(r.samples, t.samples), group(r.samples));
        for (i, total) in totals.iter().enumerate() {
            let _ = write!(l, " {:>9}", pct(r.counters[i], *total));
        }
        if by != DataBy::Space {
            let _ = write!(l, "  {:<15}", main_space(r));
        }
        let methods: Vec<String> = r
            .methods
            .iter()
            .take(TOP_METHODS)
            .map(|&(m, n)| {
                let name =
                    if (m.0 as usize) < rec.methods.len() { rec.methods.get(m).display_name() } else { "?".into() };
                format!("{name} {}", pct(n, r.samples).trim())
            })
            .collect();
        let _ = writeln!(out, "{l}  {:<width$}  {}", r.key, methods.join(", "));
    }
    if rows.len() > top {
        let rest: u64 = rows[top..].iter().map(|r| r.samples).sum();
        let _ = writeln!(
            out,
            "{:>8} {:>10}  ({} more)",
            pct(rest, t.samples),
            group(rest),
            group((rows.len() - top) as u64)
        );
    }
}

fn by_label(by: DataBy) -> &'static str {
    match by {
        DataBy::Class => "class",
        DataBy::Field => "field",
        DataBy::Space => "space",
    }
}

/// The space most of a row's samples were in, with its share when not all.
fn main_space(r: &DataRow) -> String {
    let (i, n) = r.spaces.iter().enumerate().max_by_key(|&(i, n)| (*n, std::cmp::Reverse(i))).unwrap_or((0, &0));
    let name = Space::from_u8(i as u8).name();
    if *n == r.samples {
        name.to_string()
    } else {
        format!("{name} {}", pct(*n, r.samples).trim())
    }
}

#[cfg(test)]
#[path = "data_tests.rs"]
mod tests;
