//! Human- and tool-facing outputs built from a calling context tree: collapsed stacks,
//! flame graphs (HTML, SVG) and the text report.
