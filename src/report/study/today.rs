//! "What the 1996 study would find today": the study's bonded dual net answered two NICs per
//! node with balance-rr bonding, which stripes one flow's frames over both buses and reorders
//! them. A run that also measures the same nodes and wires under Multipath TCP (one subflow per
//! bus, reassembled above them) and with one bus per connection (`none`) can say whether
//! today's answer removes the bond's penalty; one that routes the mesh over every equal-cost
//! path (ECMP, `ecmp`) beside the study's one shortest path per subnet (`none`) can say
//! whether that changes remote-wire traffic. Each question asked of the run gets its figures
//! and a verdict.

use orchestrate_worker::record::Pattern;

use super::section::{Evidence, Finding, StudySection};
use crate::report::data::{CellKey, CellSummary};
use crate::report::format::size;
use crate::report::predicted::ModelRow;
use crate::report::verdict::Verdict;
use crate::results::{PlacementKind, Statistic};

/// Today's answers as a section of the report.
pub struct Today;

impl StudySection for Today {
    fn applies(&self, run: &Evidence<'_>) -> bool {
        measured_under(run.cells, MPTCP, BOND).is_some()
            || measured_under(run.cells, ECMP, SHORTEST).is_some()
    }

    fn findings(&self, run: &Evidence<'_>) -> Vec<Finding> {
        what_the_study_would_find_today(run.cells, run.model, run.statistic)
            .map(|t| t.findings)
            .unwrap_or_default()
            .into_iter()
            .map(TodayFinding::into_finding)
            .collect()
    }

    fn title(&self) -> &'static str {
        "What the 1996 study would find today"
    }

    /// What this run measured beside the study's answer: a sentence per kind of question.
    fn introduction(&self, findings: &[Finding]) -> String {
        let bonds = findings.iter().any(|f| f.heading == MPTCP_QUESTION);
        let ecmp = findings.iter().any(|f| f.heading == ECMP_QUESTION);
        let mut s = String::new();
        if bonds {
            s.push_str(
                "The study used its nodes' two NICs by bonding them (balance-rr), which stripes \
                 one flow's frames over both buses, and today's TCP takes the reordering that \
                 causes as loss. This run measured today's answers beside it on the same \
                 emulated wires: Multipath TCP (`mptcp`: one subflow per bus, reassembled above \
                 them) and one bus per connection (`none`).",
            );
        }
        if ecmp {
            s.push_str(if bonds { " " } else { "" });
            s.push_str(
                "The study's routed mesh sent each subnet's traffic over one shortest path \
                 (`none`); this run also routed it with equal-cost multipath (`ecmp`: an address \
                 of each node's own, reached over every shortest next hop, each connection hashed \
                 onto one), with the same pairs on the same wires.",
            );
        }
        s
    }
}

/// The questions, as their findings' headings.
const MPTCP_QUESTION: &str = "Does Multipath TCP remove the bonded dual net's penalty?";
const ECMP_QUESTION: &str = "Does ECMP change remote-wire traffic on the routed mesh?";

/// The answers, when the run measured what the questions need.
#[derive(Debug, Clone, PartialEq)]
pub struct TodayAnswers {
    pub findings: Vec<TodayFinding>,
}

/// One question asked of the run, with its figures and answer.
#[derive(Debug, Clone, PartialEq)]
pub struct TodayFinding {
    pub question: &'static str,
    /// One line per cell the answer rests on.
    pub figures: Vec<String>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, from the figures.
    pub why: String,
}

impl TodayFinding {
    /// As the report shows it: the figures, then the verdict's reason.
    fn into_finding(self) -> Finding {
        let mut points = self.figures;
        points.push(format!("Verdict: {}.", self.why));
        Finding {
            heading: self.question,
            verdict: self.verdict,
            points,
        }
    }
}

const BOND: &str = "balance-rr";
const MPTCP: &str = "mptcp";
const ONE_BUS: &str = "none";
/// A routed topology's label with its shortest-path routes, and with ECMP.
const SHORTEST: &str = "none";
const ECMP: &str = "ecmp";

/// The section for a run's cells, or `None` when it measured neither a topology under both
/// balance-rr and MPTCP nor one under both shortest-path routing and ECMP.
pub fn what_the_study_would_find_today(
    cells: &[CellSummary],
    model: &[ModelRow],
    stat: Statistic,
) -> Option<TodayAnswers> {
    let question = |topology| Question {
        cells,
        model,
        stat,
        topology,
    };
    let mut findings = Vec::new();
    if let Some(t) = measured_under(cells, MPTCP, BOND) {
        findings.push(question(t).does_mptcp_remove_the_bonds_penalty());
    }
    if let Some(t) = measured_under(cells, ECMP, SHORTEST) {
        findings.push(question(t).does_ecmp_change_remote_wire());
    }
    (!findings.is_empty()).then_some(TodayAnswers { findings })
}

/// The first topology this run measured under both labels.
fn measured_under<'c>(cells: &'c [CellSummary], label: &str, other: &str) -> Option<&'c str> {
    let under = |t: &str, l: &str| {
        cells.iter().any(|c| {
            c.key.config.run.is_none() && c.key.config.topology == t && c.key.config.bonding == l
        })
    };
    cells
        .iter()
        .map(|c| c.key.config.topology.as_str())
        .find(|t| under(t, label) && under(t, other))
}

struct Question<'a> {
    cells: &'a [CellSummary],
    model: &'a [ModelRow],
    stat: Statistic,
    topology: &'a str,
}

/// A cell's figure: the headline value and the median's interval.
#[derive(Debug, Clone, Copy)]
struct Figure {
    value: f64,
    low: Option<f64>,
    high: Option<f64>,
}

impl Figure {
    /// Whether `self` beats `other` beyond doubt: medians apart by more than both intervals.
    fn clearly_above(&self, other: &Figure) -> bool {
        match (self.low, other.high) {
            (Some(low), Some(high)) => low > high,
            _ => false,
        }
    }
}

impl Question<'_> {
    /// Whether `candidate` is this run's cell `key` of the question's topology under
    /// `bonding`.
    fn is(&self, candidate: &CellKey, bonding: &str, key: &CellKey) -> bool {
        candidate.config.run.is_none()
            && candidate.config.topology == self.topology
            && candidate.config.bonding == bonding
            && candidate.config.placement == key.config.placement
            && candidate.measure == key.measure
            && candidate.pairs == key.pairs
            && candidate.size_bytes == key.size_bytes
    }

    fn cell(&self, bonding: &str, key: &CellKey) -> Option<Figure> {
        let c = self.cells.iter().find(|c| self.is(&c.key, bonding, key))?;
        let s = c.aggregate?;
        Some(Figure {
            value: c.value(self.stat)?,
            low: s.ci.map(|ci| ci.low),
            high: s.ci.map(|ci| ci.high),
        })
    }

    /// The model's row for a token cell, where it gave one.
    fn model_row(&self, bonding: &str, key: &CellKey) -> Option<&ModelRow> {
        self.model.iter().find(|r| self.is(&r.key, bonding, key))
    }

    /// Measured over predicted for a token cell, where the model gave one.
    fn of_model(&self, bonding: &str, key: &CellKey) -> Option<f64> {
        self.model_row(bonding, key).map(ModelRow::ratio)
    }

    /// The model's aggregate for a token cell, where it gave one.
    fn predicted(&self, bonding: &str, key: &CellKey) -> Option<f64> {
        self.model_row(bonding, key).map(|r| r.predicted_mbit_s)
    }

    /// The cells of `pattern` under `label` at `placement`, the one-flow ones (fewest pairs,
    /// largest size) first, then the heaviest (most pairs, largest size).
    fn cells_of(&self, label: &str, placement: PlacementKind, pattern: Pattern) -> Vec<CellKey> {
        let keys: Vec<&CellKey> = self
            .cells
            .iter()
            .map(|c| &c.key)
            .filter(|k| {
                k.config.run.is_none()
                    && k.config.topology == self.topology
                    && k.config.bonding == label
                    && k.config.placement == placement
                    && k.measure.pattern == pattern
            })
            .collect();
        let largest = |pairs: u32| {
            keys.iter()
                .filter(|k| k.pairs == pairs)
                .max_by_key(|k| k.size_bytes)
                .map(|k| (*k).clone())
        };
        let fewest = keys.iter().map(|k| k.pairs).min();
        let most = keys.iter().map(|k| k.pairs).max();
        let mut out: Vec<CellKey> = fewest.and_then(largest).into_iter().collect();
        if most != fewest {
            out.extend(most.and_then(largest));
        }
        out
    }

    fn does_mptcp_remove_the_bonds_penalty(&self) -> TodayFinding {
        let mut figures = Vec::new();
        // Per cell: where MPTCP stands against balance-rr, and whether beyond doubt.
        let mut outcomes: Vec<(String, Outcome)> = Vec::new();
        for pattern in [Pattern::Stream, Pattern::Token] {
            for key in self.cells_of(MPTCP, PlacementKind::LocalWire, pattern) {
                let (Some(mp), Some(rr)) = (self.cell(MPTCP, &key), self.cell(BOND, &key)) else {
                    continue;
                };
                let of_model = |r: Option<f64>| {
                    r.map(|r| format!(" ({:.0}% of its model)", r * 100.0))
                        .unwrap_or_default()
                };
                let none = self
                    .cell(ONE_BUS, &key)
                    .map(|f| format!(", none {:.2} Mbit/s", f.value))
                    .unwrap_or_default();
                let cell = format!(
                    "{}, {} pair(s), {}",
                    key.measure.label(),
                    key.pairs,
                    size(key.size_bytes)
                );
                figures.push(format!(
                    "{cell}: balance-rr {:.2} Mbit/s{}, MPTCP {:.2} Mbit/s{}{none}",
                    rr.value,
                    of_model(self.of_model(BOND, &key)),
                    mp.value,
                    of_model(self.of_model(MPTCP, &key)),
                ));
                outcomes.push((cell, Outcome::of(&mp, &rr)));
            }
        }
        let (ahead, behind) = (
            Outcome::cells(&outcomes, Outcome::Ahead),
            Outcome::cells(&outcomes, Outcome::Behind),
        );
        let (verdict, why) = match (ahead.is_empty(), behind.is_empty()) {
            _ if outcomes.is_empty() => (
                Verdict::No,
                "no cell was measured under both balance-rr and MPTCP".to_owned(),
            ),
            (false, true) => (
                Verdict::Yes,
                format!(
                    "MPTCP is ahead of balance-rr beyond both medians' intervals in {ahead}, \
                     and behind in none"
                ),
            ),
            (false, false) => (
                Verdict::InPart,
                format!(
                    "MPTCP is ahead of balance-rr beyond both medians' intervals in {ahead}, \
                     but behind in {behind}"
                ),
            ),
            (true, _) => (
                Verdict::No,
                if behind.is_empty() {
                    "MPTCP is nowhere ahead of balance-rr beyond the medians' intervals".to_owned()
                } else {
                    format!("MPTCP is nowhere ahead of balance-rr, and behind in {behind}")
                },
            ),
        };
        TodayFinding {
            question: MPTCP_QUESTION,
            figures,
            verdict,
            why,
        }
    }
}

impl Question<'_> {
    /// ECMP against one shortest path per subnet, in the remote-wire cells (the only ones
    /// whose pairs talk through a forwarder, so the only ones routing can change): the
    /// one-flow and the heaviest cell of each pattern.
    fn does_ecmp_change_remote_wire(&self) -> TodayFinding {
        let mut figures = Vec::new();
        let mut outcomes: Vec<(String, Outcome)> = Vec::new();
        for pattern in [Pattern::Token, Pattern::Stream] {
            for key in self.cells_of(ECMP, PlacementKind::RemoteWire, pattern) {
                let (Some(e), Some(sp)) = (self.cell(ECMP, &key), self.cell(SHORTEST, &key)) else {
                    continue;
                };
                let model = match (self.predicted(SHORTEST, &key), self.predicted(ECMP, &key)) {
                    (Some(ps), Some(pe)) => {
                        format!(" (model: {ps:.2} and {pe:.2} Mbit/s)")
                    }
                    _ => String::new(),
                };
                let cell = format!(
                    "{}, {} pair(s), {}",
                    key.measure.label(),
                    key.pairs,
                    size(key.size_bytes)
                );
                figures.push(format!(
                    "{cell}, remote-wire: one shortest path {:.2} Mbit/s, ECMP {:.2} Mbit/s \
                     ({:+.0}%){model}",
                    sp.value,
                    e.value,
                    (e.value / sp.value - 1.0) * 100.0
                ));
                outcomes.push((cell, Outcome::of(&e, &sp)));
            }
        }
        let (ahead, behind) = (
            Outcome::cells(&outcomes, Outcome::Ahead),
            Outcome::cells(&outcomes, Outcome::Behind),
        );
        let changed = outcomes
            .iter()
            .filter(|(_, o)| *o != Outcome::Level)
            .count();
        let apart = match (ahead.is_empty(), behind.is_empty()) {
            (false, true) => format!("ECMP is ahead beyond both medians' intervals in {ahead}"),
            (true, false) => format!("ECMP is behind beyond both medians' intervals in {behind}"),
            _ => format!(
                "ECMP is ahead beyond both medians' intervals in {ahead}, and behind in {behind}"
            ),
        };
        let (verdict, why) = if outcomes.is_empty() {
            (
                Verdict::No,
                "no remote-wire cell was measured under both routings".to_owned(),
            )
        } else if changed == 0 {
            (
                Verdict::No,
                "in every compared cell the two routings are within the medians' intervals"
                    .to_owned(),
            )
        } else if changed == outcomes.len() {
            (Verdict::Yes, format!("{apart}: every compared cell"))
        } else {
            (
                Verdict::InPart,
                format!(
                    "{apart}; {} of {} compared cells are within the intervals",
                    outcomes.len() - changed,
                    outcomes.len()
                ),
            )
        };
        TodayFinding {
            question: ECMP_QUESTION,
            figures,
            verdict,
            why,
        }
    }
}

/// Where one configuration's cell stands against another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ahead,
    Level,
    Behind,
}

impl Outcome {
    /// Where `a` stands against `b`: apart only beyond both medians' intervals.
    fn of(a: &Figure, b: &Figure) -> Outcome {
        if a.clearly_above(b) {
            Outcome::Ahead
        } else if b.clearly_above(a) {
            Outcome::Behind
        } else {
            Outcome::Level
        }
    }

    /// The cells with outcome `o`, joined for a sentence.
    fn cells(outcomes: &[(String, Outcome)], o: Outcome) -> String {
        outcomes
            .iter()
            .filter(|(_, x)| *x == o)
            .map(|(c, _)| c.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::{Config, Latency, Measure};
    use crate::report::stats::{MedianCi, RepStats};
    use orchestrate_worker::record::Protocol;

    fn cell(bonding: &str, pattern: Pattern, pairs: u32, size: u64, mbit_s: f64) -> CellSummary {
        CellSummary {
            key: CellKey {
                measure: Measure {
                    pattern,
                    protocol: Protocol::Tcp,
                },
                config: Config {
                    run: None,
                    topology: "bonded-dual-net".into(),
                    bonding: bonding.into(),
                    bond_driver: None,
                    placement: PlacementKind::LocalWire,
                },
                pairs,
                size_bytes: size,
            },
            aggregate: Some(RepStats {
                n: 6,
                best: mbit_s,
                median: mbit_s,
                mean: mbit_s,
                ci: Some(MedianCi {
                    low: mbit_s * 0.98,
                    high: mbit_s * 1.02,
                    coverage: 0.97,
                }),
            }),
            repetitions: vec![mbit_s; 6],
            per_pair_mean_mbit_s: None,
            per_pair_min_mbit_s: None,
            latency: Latency::default(),
            tcp: None,
            cpu: None,
            failed_attempts: 0,
            failed_trials: 0,
        }
    }

    fn streams(rr: f64, mp: f64, one: f64) -> Vec<CellSummary> {
        vec![
            cell(BOND, Pattern::Stream, 1, 65536, rr),
            cell(MPTCP, Pattern::Stream, 1, 65536, mp),
            cell(ONE_BUS, Pattern::Stream, 1, 65536, one),
        ]
    }

    fn answer(cells: &[CellSummary]) -> TodayFinding {
        what_the_study_would_find_today(cells, &[], Statistic::Best)
            .unwrap()
            .findings
            .remove(0)
    }

    fn mesh(label: &str, pattern: Pattern, pairs: u32, mbit_s: f64) -> CellSummary {
        let mut c = cell(label, pattern, pairs, 8192, mbit_s);
        c.key.config.topology = "routed-mesh-4x4".into();
        c.key.config.placement = PlacementKind::RemoteWire;
        c
    }

    #[test]
    fn ecmp_is_asked_of_a_routed_mesh_measured_both_ways() {
        // One pair level, seven pairs 20% ahead: in part.
        let cells = [
            mesh(SHORTEST, Pattern::Token, 1, 1.2),
            mesh(ECMP, Pattern::Token, 1, 1.2),
            mesh(SHORTEST, Pattern::Token, 7, 8.0),
            mesh(ECMP, Pattern::Token, 7, 9.6),
        ];
        let today = what_the_study_would_find_today(&cells, &[], Statistic::Best).unwrap();
        assert_eq!(today.findings.len(), 1, "no MPTCP question without MPTCP");
        let f = &today.findings[0];
        assert_eq!(f.verdict, Verdict::InPart, "{}", f.why);
        assert!(
            f.why.contains("ahead") && f.why.contains("7 pair(s)"),
            "{}",
            f.why
        );
        assert_eq!(f.figures.len(), 2);
        assert!(f.figures[1].contains("(+20%)"), "{}", f.figures[1]);

        let behind = [
            mesh(SHORTEST, Pattern::Token, 7, 16.0),
            mesh(ECMP, Pattern::Token, 7, 12.5),
        ];
        let f = answer(&behind);
        assert_eq!(f.verdict, Verdict::Yes, "{}", f.why);
        assert!(f.why.contains("behind"), "{}", f.why);

        let same = [
            mesh(SHORTEST, Pattern::Token, 7, 8.0),
            mesh(ECMP, Pattern::Token, 7, 8.05),
        ];
        assert_eq!(answer(&same).verdict, Verdict::No);

        // Local-wire cells are not routed through anyone: nothing to compare.
        let mut local = same.clone();
        for c in &mut local {
            c.key.config.placement = PlacementKind::LocalWire;
        }
        assert_eq!(answer(&local).verdict, Verdict::No);
        assert!(answer(&local).figures.is_empty());
    }

    #[test]
    fn no_section_without_both_the_bond_and_mptcp() {
        let mut cells = streams(16.0, 18.5, 9.3);
        cells.retain(|c| c.key.config.bonding != MPTCP);
        assert!(what_the_study_would_find_today(&cells, &[], Statistic::Best).is_none());
    }

    #[test]
    fn verdicts_follow_where_mptcp_stands_against_the_bond() {
        let yes = answer(&streams(16.0, 18.5, 9.3));
        assert_eq!(yes.verdict, Verdict::Yes, "{}", yes.why);
        assert!(
            yes.why.contains("ahead of balance-rr beyond"),
            "{}",
            yes.why
        );
        assert!(yes.figures[0].contains("balance-rr 16.00 Mbit/s, MPTCP 18.50 Mbit/s, none 9.30"));

        let mut mixed = streams(16.0, 18.5, 9.3);
        mixed.push(cell(BOND, Pattern::Token, 1, 8192, 8.2));
        mixed.push(cell(MPTCP, Pattern::Token, 1, 8192, 4.4));
        let f = answer(&mixed);
        assert_eq!(f.verdict, Verdict::InPart, "{}", f.why);
        assert!(
            f.why.contains("behind in token/tcp, 1 pair(s), 8 KiB"),
            "{}",
            f.why
        );

        assert_eq!(answer(&streams(16.0, 16.1, 9.3)).verdict, Verdict::No);
        assert_eq!(answer(&streams(16.0, 12.0, 9.3)).verdict, Verdict::No);
    }

    #[test]
    fn token_cells_are_quoted_with_one_and_seven_pairs() {
        let mut cells = streams(16.0, 18.5, 9.3);
        for (pairs, rr, mp) in [(1, 1.2, 1.1), (7, 6.4, 9.0)] {
            cells.push(cell(BOND, Pattern::Token, pairs, 8192, rr));
            cells.push(cell(MPTCP, Pattern::Token, pairs, 8192, mp));
            cells.push(cell(BOND, Pattern::Token, pairs, 64, rr / 10.0));
            cells.push(cell(MPTCP, Pattern::Token, pairs, 64, mp / 10.0));
        }
        let f = answer(&cells);
        let tokens: Vec<&String> = f
            .figures
            .iter()
            .filter(|l| l.starts_with("token"))
            .collect();
        assert_eq!(tokens.len(), 2, "{:?}", f.figures);
        assert!(tokens[0].contains("1 pair(s), 8 KiB"), "{}", tokens[0]);
        assert!(
            tokens[1].contains("7 pair(s), 8 KiB: balance-rr 6.40"),
            "{}",
            tokens[1]
        );
    }
}
