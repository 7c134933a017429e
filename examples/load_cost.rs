//! What one storage or workgroup load costs on an adapter, by access pattern: every kernel below
//! reads the same 64 MiB once (LOADS words per invocation, summed and written out so nothing is
//! dropped), and only where neighbouring invocations' addresses lie and whether a load's address
//! depends on the previous load differ. On CPU drivers (lavapipe) a load with a per-invocation
//! address runs lane by lane; this measures whether its cost follows the number of loads or
//! the spread of the addresses across a SIMD program's lanes (the results:
//! docs/performance.md#what-one-load-costs).
//!
//! `cargo run --release --example load_cost -- [ADAPTER]` (default: vulkan)

use ninfer_wgpu::bench::{median_time, Timing};
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::native::block_on;

const WORDS: u32 = 16 << 20;
const LOADS: u32 = 16;
const WG: u32 = 64;

/// What each load reads, and what comes with it.
#[derive(Clone, Copy)]
enum Element {
    Word,
    Vec4,
    /// A word, then a lookup at a data-dependent index of a 1024-word table in workgroup memory
    /// (as an i-quant grid is read), filled by the workgroup first.
    WorkgroupTable,
    /// The same lookup in a private array with a constant initializer, which a driver may turn
    /// into constant data (no fill, no barrier).
    ConstantTable,
}

impl Element {
    fn words(self) -> u32 {
        match self {
            Element::Vec4 => 4,
            Element::Word | Element::WorkgroupTable | Element::ConstantTable => 1,
        }
    }
}

/// (name, the address of load k of invocation i in `data`'s elements, what is loaded).
const PATTERNS: &[(&str, &str, Element)] = &[
    ("neighbours 4 B apart (interleaved)", "k * N + i", Element::Word),
    ("neighbours 64 B apart (runs of 16 words)", "i * LOADS + k", Element::Word),
    ("runs of 16 words, each address after the previous load", "i * LOADS + k + (v & 1u)", Element::Word),
    ("neighbours 16 B apart, vec4 (interleaved)", "k * N + i", Element::Vec4),
    ("neighbours 64 B apart, vec4 (runs of 4 vec4)", "i * LOADS + k", Element::Vec4),
    ("one address for a whole workgroup (uniform)", "w.x * LOADS + k", Element::Word),
    ("scattered words (a hash of i and k)", "(i * 40503u + k * 7919u) & (N * LOADS - 1u)", Element::Word),
    // Minus the runs of 16 words' time, these two are the lookups'.
    ("runs of 16 words, plus a workgroup-table lookup per load", "i * LOADS + k", Element::WorkgroupTable),
    ("runs of 16 words, plus a constant-table lookup per load", "i * LOADS + k", Element::ConstantTable),
];

const LOOKUP: &str = "v ^ table[(v + i * 40503u + k * 7919u) & 1023u]";

fn source(address: &str, element: Element, loads: u32) -> String {
    let (ty, sum, init, table, fill) = match element {
        Element::Word => ("u32", "v", "0u", String::new(), ""),
        Element::Vec4 => ("vec4<u32>", "v.x ^ v.y ^ v.z ^ v.w", "vec4<u32>(0u)", String::new(), ""),
        Element::WorkgroupTable => ("u32", LOOKUP, "0u", "var<workgroup> table: array<u32, 1024>;".to_string(), FILL),
        Element::ConstantTable => {
            let words: Vec<String> = (0..1024u32).map(|t| format!("{}u", t.wrapping_mul(2654435761))).collect();
            let table = format!("var<private> table: array<u32, 1024> = array<u32, 1024>({});", words.join(", "));
            ("u32", LOOKUP, "0u", table, "")
        }
    };
    format!(
        "@group(0) @binding(0) var<storage, read> data: array<{ty}>;
{table}
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
const LOADS: u32 = {loads}u;
const WG: u32 = {WG}u;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(num_workgroups) n: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{
    let N = n.x * {WG}u;
    let i = g.x;
    {fill}
    var acc = 0u;
    var v = {init};
    for (var k = 0u; k < LOADS; k++) {{
        v = data[{address}];
        acc ^= {sum};
    }}
    out[i] = acc;
}}
",
    )
}

/// Every invocation writes its share of the table (the workgroup's invocations stride it), then
/// the workgroup waits for all of it.
const FILL: &str = "for (var t = li; t < 1024u; t += WG) { table[t] = t * 2654435761u; }
    workgroupBarrier();";

fn main() -> Result<(), ninfer_wgpu::Error> {
    let adapter = std::env::args().nth(1).unwrap_or_else(|| "vulkan".into());
    let gpu = block_on(Gpu::open(&GpuOptions { adapter: Some(adapter), ..Default::default() }))?;
    let (device, queue) = (gpu.device(), gpu.queue());
    println!("{}", gpu.platform().summary());
    let data = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("data"),
        size: u64::from(WORDS) * 4,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    for &(name, address, element) in PATTERNS {
        // The same bytes read in every pattern: a vec4 load reads four words.
        let width = element.words();
        let loads = LOADS / width;
        let invocations = WORDS / (loads * width);
        let out = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("out"),
            size: u64::from(invocations) * 4,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(source(address, element, loads).into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(name),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: data.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
            ],
        });
        let time = median_time(Timing::default(), || {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(invocations / WG, 1, 1);
            }
            queue.submit([encoder.finish()]);
            gpu.wait()
        })?;
        let seconds = time.as_secs_f64();
        let per_load = seconds * 1e9 / f64::from(invocations * loads);
        println!(
            "{name:<58} {:7.2} ms  {:6.2} GB/s  {per_load:6.3} ns per load",
            seconds * 1e3,
            f64::from(WORDS) * 4.0 / seconds / 1e9
        );
    }
    Ok(())
}
