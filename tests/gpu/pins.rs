//! What CI pins about each adapter (`NINFER_WGPU_EXPECT_CAPS`), and the test that holds every
//! adapter under test to its pin.

use super::{ci, open, selectors};
use ninfer_wgpu::gpu::GpuOptions;

/// What CI pins about each adapter, so that a probe or feature regression is a failing test
/// rather than kernels quietly dropping out of the run. Read only by this test binary.
///
/// `NINFER_WGPU_EXPECT_CAPS` holds `SELECTOR=FACT,FACT,...` entries separated by `;`, one for
/// each selector of `NINFER_WGPU_EXPECT`. The facts listed are all the adapter has; an unlisted
/// one is pinned absent:
/// - `subgroup`: the subgroup kernels run (the SUBGROUP feature, and the layout probe passed);
/// - `dot4`: its WGSL has `dot4I8Packed`, so the packed-dot A8 kernels run;
/// - `keeps-subnormals` or `flushes` (exactly one): the subnormal probe's answer. A probe that
///   answered neither (`Probes::broken`) matches neither.
///
/// Unset (a developer's own GPU), the test prints each adapter's facts in this syntax and pins
/// nothing; under `CI=true` it must be set.
const CAPS_VAR: &str = "NINFER_WGPU_EXPECT_CAPS";
const FACTS: [&str; 4] = ["subgroup", "dot4", "keeps-subnormals", "flushes"];

/// The facts of `NINFER_WGPU_EXPECT_CAPS` an adapter shows, in [`FACTS`] order.
fn facts(p: &ninfer_wgpu::gpu::Platform) -> Vec<&'static str> {
    let subgroup = p.has_subgroups && p.probes.subgroups_contiguous == Some(true);
    let present = [
        subgroup,
        p.has_packed_dot,
        p.probes.flushes_subnormal_results == Some(false),
        p.probes.flushes_subnormal_results == Some(true),
    ];
    FACTS.into_iter().zip(present).filter(|&(_, on)| on).map(|(fact, _)| fact).collect()
}

/// `NINFER_WGPU_EXPECT_CAPS` as (selector, facts in [`FACTS`] order); errors name the entry.
fn parse_pins(text: &str) -> Result<Vec<(String, Vec<&'static str>)>, String> {
    let mut pins: Vec<(String, Vec<&'static str>)> = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (selector, list) = entry.split_once('=').ok_or(format!("`{entry}` is not SELECTOR=FACT,..."))?;
        let listed: Vec<&str> = list.split(',').map(str::trim).filter(|f| !f.is_empty()).collect();
        if let Some(unknown) = listed.iter().find(|f| !FACTS.contains(f)) {
            return Err(format!("`{entry}`: unknown fact `{unknown}`; facts are {}", FACTS.join(", ")));
        }
        let facts: Vec<&'static str> = FACTS.into_iter().filter(|f| listed.contains(f)).collect();
        if facts.iter().filter(|f| ["keeps-subnormals", "flushes"].contains(f)).count() != 1 {
            return Err(format!("`{entry}`: name exactly one of keeps-subnormals and flushes"));
        }
        if pins.iter().any(|(s, _)| s == selector.trim()) {
            return Err(format!("`{}` is pinned twice", selector.trim()));
        }
        pins.push((selector.trim().to_string(), facts));
    }
    Ok(pins)
}

#[test]
fn capability_pins_state_every_fact_and_one_subnormal_answer() {
    let ci_line = "vulkan/llvmpipe=subgroup,dot4,keeps-subnormals; gl=dot4,keeps-subnormals;swiftshader=flushes,dot4";
    assert_eq!(
        parse_pins(ci_line),
        Ok(vec![
            ("vulkan/llvmpipe".to_string(), vec!["subgroup", "dot4", "keeps-subnormals"]),
            ("gl".to_string(), vec!["dot4", "keeps-subnormals"]),
            ("swiftshader".to_string(), vec!["dot4", "flushes"]),
        ])
    );
    for (bad, why) in [
        ("gl=dot4", "exactly one"),
        ("gl=keeps-subnormals,flushes", "exactly one"),
        ("gl=subgroups,flushes", "unknown fact `subgroups`"),
        ("gl", "not SELECTOR=FACT"),
        ("gl=flushes;gl=flushes", "pinned twice"),
    ] {
        let e = parse_pins(bad).expect_err(bad);
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// Each adapter's facts against `NINFER_WGPU_EXPECT_CAPS`: a subgroup probe that regressed on
/// lavapipe, or a flush probe that misfired, fails here instead of shrinking what runs.
#[test]
fn each_adapter_offers_what_ci_pins_for_it() {
    let pins = match std::env::var(CAPS_VAR) {
        Ok(text) => Some(parse_pins(&text).unwrap_or_else(|e| panic!("{CAPS_VAR}: {e}"))),
        Err(_) => {
            assert!(!ci(), "CI=true but {CAPS_VAR} is unset: CI pins what each adapter offers (see .ci/run)");
            None
        }
    };
    let selectors = selectors();
    if let Some(pins) = &pins {
        for (pinned, _) in pins {
            assert!(selectors.contains(pinned), "{CAPS_VAR} pins `{pinned}`, which is not an adapter under test");
        }
    }
    let mut differ = Vec::new();
    for selector in &selectors {
        let Some(gpu) = open(selector, GpuOptions::default()) else { continue };
        let found = facts(gpu.platform());
        println!("{selector}={}   # {}", found.join(","), gpu.platform().summary());
        for broken in &gpu.platform().probes.broken {
            println!("  {broken}");
        }
        let Some(pins) = &pins else { continue };
        match pins.iter().find(|(pinned, _)| pinned == selector) {
            Some((_, expected)) if *expected == found => {}
            Some((_, expected)) => differ.push(format!(
                "{selector}: pinned {}, found {} (probes {:?})",
                expected.join(","),
                found.join(","),
                gpu.platform().probes
            )),
            None => differ.push(format!("{selector}: no entry in {CAPS_VAR}")),
        }
    }
    if pins.is_none() {
        println!("{CAPS_VAR} is unset: nothing pinned (the lines above, joined by `;`, would pin this machine)");
    }
    assert!(differ.is_empty(), "adapters differ from what CI pins for them:\n{}", differ.join("\n"));
}
