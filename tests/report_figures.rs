//! Figures fit a paper's column: read back from the SVG, every series has its own marker and
//! line pattern, size axes are labelled in B/KiB/MiB, the legend sits outside the data,
//! crowded panels are split, and a figure with one x value is a bar chart.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use orchestrate::report::{ReportOptions, report_run};
use synthetic::{SynthConfig, SynthSpec, write_run};

fn report(spec: &SynthSpec) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), spec).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    dir
}

fn svg(dir: &Path, stem: &str) -> String {
    std::fs::read_to_string(dir.join(format!("figures/{stem}.svg")))
        .unwrap_or_else(|e| panic!("{stem}: {e}"))
}

fn has_class(n: &roxmltree::Node<'_, '_>, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|c| c == class))
}

fn num(n: &roxmltree::Node<'_, '_>, attr: &str) -> f64 {
    n.attribute(attr)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{:?} has no numeric {attr}", n.tag_name().name()))
}

/// The study with five more local-wire configurations: eight in all, more than a panel holds.
fn crowded() -> SynthSpec {
    let mut spec = SynthSpec::study(11);
    let template = spec.configs[1].clone();
    for i in 0..5 {
        spec.configs.push(SynthConfig {
            topology: format!("mesh-variant-{i}"),
            latency_us: 150.0 + 20.0 * i as f64,
            wires: 2.0 + i as f64,
            ..template.clone()
        });
    }
    spec
}

/// Panels of a figure by their data area, each with its series' (label, marker, dash).
fn panels(doc: &roxmltree::Document<'_>) -> Vec<Vec<(String, String, String)>> {
    let mut out: Vec<Vec<(String, String, String)>> = Vec::new();
    // The overlay writes each panel's data area, then that panel's series.
    for n in doc.descendants() {
        if n.has_tag_name("rect") && has_class(&n, "plot-area") {
            out.push(Vec::new());
        } else if n.has_tag_name("g") && has_class(&n, "series") {
            let a = |k: &str| n.attribute(k).unwrap_or_default().to_owned();
            out.last_mut()
                .expect("a series before any plot area")
                .push((a("data-label"), a("data-marker"), a("data-dash")));
        }
    }
    out
}

#[test]
fn series_differ_in_marker_and_dash_and_panels_hold_at_most_six() {
    let dir = report(&crowded());
    for stem in [
        "throughput-vs-size-token-tcp",
        "throughput-vs-pairs-token-tcp",
        "latency-vs-size-token-tcp",
    ] {
        let text = svg(dir.path(), stem);
        let doc = roxmltree::Document::parse(&text).unwrap();
        let panels = panels(&doc);
        assert!(panels.len() >= 2, "{stem}: eight series are split");
        let mut style_of: BTreeMap<String, (String, String)> = BTreeMap::new();
        for p in &panels {
            assert!(!p.is_empty() && p.len() <= 6, "{stem}: {} series", p.len());
            for (label, marker, dash) in p {
                let style = (marker.clone(), dash.clone());
                // A configuration looks the same in every panel.
                assert_eq!(
                    style_of.entry(label.clone()).or_insert(style.clone()),
                    &style
                );
            }
        }
        assert_eq!(style_of.len(), 8, "{stem}");
        let markers: BTreeSet<&String> = style_of.values().map(|s| &s.0).collect();
        let dashes: BTreeSet<&String> = style_of.values().map(|s| &s.1).collect();
        assert_eq!(markers.len(), 8, "{stem}: markers {markers:?}");
        assert_eq!(dashes.len(), 8, "{stem}: dash patterns {dashes:?}");
        // The drawn line and markers carry the style the group names.
        for g in doc
            .descendants()
            .filter(|n| n.has_tag_name("g") && has_class(n, "series"))
        {
            let line = g.children().find(|c| c.has_tag_name("polyline")).unwrap();
            let dash = g.attribute("data-dash").unwrap();
            assert_eq!(line.attribute("stroke-dasharray").unwrap_or("none"), dash);
            let points = line.attribute("points").unwrap().split_whitespace().count();
            let markers = g.children().filter(|c| has_class(c, "marker")).count();
            assert_eq!(markers, points, "{stem}: a marker on every point");
        }
    }
}

#[test]
fn size_axes_are_labelled_in_binary_units() {
    let dir = report(&SynthSpec::study(7));
    for stem in ["throughput-vs-size-token-tcp", "latency-vs-size-token-tcp"] {
        let text = svg(dir.path(), stem);
        let doc = roxmltree::Document::parse(&text).unwrap();
        let texts: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or_default().trim().to_owned())
            .collect();
        for tick in ["64 B", "8 KiB"] {
            assert!(
                texts.iter().any(|t| t == tick),
                "{stem}: no tick {tick}: {texts:?}"
            );
        }
        // No bare numbers standing for sizes, nor decimal-prefix sizes.
        for bad in ["64", "8192", "8K", "8 KB"] {
            assert!(!texts.iter().any(|t| t == bad), "{stem}: tick {bad}");
        }
    }
}

#[test]
fn figures_print_at_a_column_or_page_width_and_legends_sit_outside_the_data() {
    let dir = report(&crowded());
    let figures = std::fs::read_dir(dir.path().join("figures")).unwrap();
    for entry in figures {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        if name.starts_with("topology-") {
            continue;
        }
        // Printed a column (3.5 in) or a page (7 in) wide, no text below 8 pt at that size.
        let pt_per_unit = print_scale(&doc, &name);
        for t in doc.descendants().filter(|n| n.has_tag_name("text")) {
            if t.text().is_some_and(|s| !s.trim().is_empty()) {
                let pt = num(&t, "font-size") * pt_per_unit;
                assert!(pt >= 8.0, "{name}: {:?} prints at {pt:.1} pt", t.text());
            }
        }
        let areas: Vec<(f64, f64, f64, f64)> = doc
            .descendants()
            .filter(|n| has_class(n, "plot-area"))
            .map(|n| {
                (
                    num(&n, "x"),
                    num(&n, "y"),
                    num(&n, "width"),
                    num(&n, "height"),
                )
            })
            .collect();
        assert!(!areas.is_empty(), "{name}");
        let Some(legend) = doc.descendants().find(|n| has_class(n, "legend")) else {
            continue;
        };
        let below_all = areas.iter().map(|a| a.1 + a.3).fold(0.0, f64::max);
        for n in legend.descendants().filter(|n| n.is_element()) {
            for attr in ["y", "cy"] {
                if n.attribute(attr).is_some() {
                    assert!(num(&n, attr) > below_all, "{name}: legend inside the data");
                }
            }
            if let Some(points) = n.attribute("points") {
                for p in points.split_whitespace() {
                    let y: f64 = p.split(',').nth(1).unwrap().parse().unwrap();
                    assert!(y > below_all, "{name}: legend line inside the data");
                }
            }
        }
    }
}

/// Points per SVG unit at the figure's declared print width, which must be a column's
/// (3.5 in) or a page's (7 in).
fn print_scale(doc: &roxmltree::Document<'_>, name: &str) -> f64 {
    let root = doc.root_element();
    let width = root.attribute("width").unwrap_or_default();
    let inches: f64 = width
        .strip_suffix("in")
        .unwrap_or_else(|| panic!("{name}: width {width:?} is not in inches"))
        .parse()
        .unwrap();
    assert!(
        [3.5, 7.0].contains(&inches),
        "{name}: {inches} in is neither a column nor a page"
    );
    let view: Vec<f64> = root
        .attribute("viewBox")
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    inches * 72.0 / view[2]
}

/// Pixel positions at print resolution.
type Pixels = BTreeSet<(i64, i64)>;

/// `svg` rendered without its text (resvg built without fonts) to RGBA pixels.
fn render(svg: &str) -> Vec<u8> {
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).unwrap();
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    pixmap.data().to_vec()
}

/// The study with a twin of the routed mesh: another topology measuring exactly the same
/// values, the case where one series could lie wholly under another.
fn with_twins() -> SynthSpec {
    let mut spec = SynthSpec::study(7);
    let twin = SynthConfig {
        topology: "twin-mesh".into(),
        ..spec.configs[1].clone()
    };
    spec.configs.push(twin);
    spec
}

#[test]
fn no_series_hides_under_another_when_the_figure_is_rendered() {
    let dir = report(&with_twins());
    let mut checked = 0;
    for stem in [
        "throughput-vs-size-token-tcp",
        "throughput-vs-pairs-token-tcp",
        "latency-vs-size-token-tcp",
    ] {
        let text = svg(dir.path(), stem);
        let whole = render(&text);
        let doc = roxmltree::Document::parse(&text).unwrap();
        // No two series of a panel put all their points on the same pixels at 300 dpi.
        let dots_per_unit = print_scale(&doc, stem) / 72.0 * 300.0;
        let mut panels: Vec<Vec<(String, Pixels)>> = Vec::new();
        for n in doc.descendants() {
            if n.has_tag_name("rect") && has_class(&n, "plot-area") {
                panels.push(Vec::new());
            } else if n.has_tag_name("g") && has_class(&n, "series") {
                let line = n.children().find(|c| c.has_tag_name("polyline")).unwrap();
                let pixels: Pixels = line
                    .attribute("points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        let at = |v: &str| (v.parse::<f64>().unwrap() * dots_per_unit).round();
                        (at(x) as i64, at(y) as i64)
                    })
                    .collect();
                let label = n.attribute("data-label").unwrap().to_owned();
                panels.last_mut().unwrap().push((label, pixels));
            }
        }
        for panel in &panels {
            for (i, (a, pa)) in panel.iter().enumerate() {
                for (b, pb) in &panel[i + 1..] {
                    assert_ne!(pa, pb, "{stem}: {a} and {b} share every point's pixels");
                }
            }
        }
        for g in doc
            .descendants()
            .filter(|n| n.has_tag_name("g") && has_class(n, "series"))
        {
            // Leaving a series out must change some pixel: else it is wholly hidden.
            let r = g.range();
            let without = format!("{}{}", &text[..r.start], &text[r.end..]);
            assert_ne!(
                render(&without),
                whole,
                "{stem}: series {:?} is hidden under the others",
                g.attribute("data-label")
            );
            checked += 1;
        }
    }
    assert!(checked >= 9, "only {checked} series checked");
}

#[test]
fn a_figure_with_one_x_value_is_a_bar_chart() {
    let mut spec = crowded();
    spec.sizes = vec![2 << 20];
    let dir = report(&spec);
    let text = svg(dir.path(), "throughput-vs-size-token-tcp");
    let doc = roxmltree::Document::parse(&text).unwrap();
    let bars = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && has_class(n, "bar"))
        .count();
    // Two pair counts, a bar for each of the eight configurations in each.
    assert_eq!(bars, 16);
    assert!(
        !doc.descendants()
            .any(|n| n.has_tag_name("polyline") && has_class(&n, "line")),
        "no lines through a single x"
    );
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    assert!(texts.contains(&"7 pairs, 2 MiB"), "{texts:?}");
    // Labelled as report.md's legend table names mesh-variant-4.
    assert!(
        texts.contains(&"MV4 local-wire"),
        "bars are labelled: {texts:?}"
    );
    // Pairs still vary, so that figure keeps its lines.
    let pairs = svg(dir.path(), "throughput-vs-pairs-token-tcp");
    assert!(!pairs.contains(r#"class="bar""#));
}

#[test]
fn compared_runs_each_have_their_colour_and_configurations_keep_their_marker() {
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<std::path::PathBuf> = ["before", "after"]
        .iter()
        .map(|name| {
            let dir = root.path().join(name);
            write_run(&dir, &SynthSpec::study(7)).unwrap();
            dir
        })
        .collect();
    let out = root.path().join("comparison");
    orchestrate::report::compare(&dirs, &out, &ReportOptions::default()).unwrap();
    let text = svg(&out, "throughput-vs-size-token-tcp");
    let doc = roxmltree::Document::parse(&text).unwrap();
    // (run, configuration) → (marker, colour), from the first panel's series.
    let mut seen: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    for g in doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && has_class(n, "series"))
    {
        let label = g.attribute("data-label").unwrap();
        // `r1:BDN local-wire`: the run's number in report.md's legend, then the label.
        let (run, config) = label.split_once(':').unwrap();
        let line = g.children().find(|c| c.has_tag_name("polyline")).unwrap();
        seen.insert(
            (run.to_owned(), config.to_owned()),
            (
                g.attribute("data-marker").unwrap().to_owned(),
                line.attribute("stroke").unwrap().to_owned(),
            ),
        );
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    let configs: BTreeSet<&String> = seen.keys().map(|k| &k.1).collect();
    for c in configs {
        let before = &seen[&("r1".to_owned(), c.clone())];
        let after = &seen[&("r2".to_owned(), c.clone())];
        assert_eq!(before.0, after.0, "{c}: one marker per configuration");
        assert_ne!(before.1, after.1, "{c}: one colour per run");
    }
    let colours: BTreeSet<&String> = seen.values().map(|v| &v.1).collect();
    assert_eq!(colours.len(), 2, "a colour per run: {colours:?}");
}
