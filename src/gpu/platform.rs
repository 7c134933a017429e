//! What an adapter is and can do: identity, the optional features we use, the limits we run
//! under, and what the probes found.

use serde::{Deserialize, Serialize};

/// Results of the probe kernels run when a device opens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// `Some(true)` when an f32 multiply whose exact result is subnormal returned +0, `Some(false)`
    /// when it returned the subnormal ([`flushes_subnormals`]).
    pub flushes_subnormal_results: Option<bool>,
    /// `Some(true)` when subgroups are runs of at least 4 consecutive invocations with a size
    /// dividing the products' `kernels::MATMUL_WG`.
    pub subgroups_contiguous: Option<bool>,
    /// Probes that came back with neither of the answers they tell apart, each saying what it
    /// got. Their question stays unanswered (`None`), so a device that multiplies wrongly is not
    /// excused as one that flushes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
}

/// The subnormal probe's operands and exact product: 2^-100 · 2^-30 = 2^-130, an f32 subnormal.
pub const SUBNORMAL_PROBE: [u32; 3] = [0x0D80_0000, 0x3080_0000, 0x0008_0000];

/// What the subnormal probe's product word says: `Ok(false)` for the exact subnormal, `Ok(true)`
/// for +0 (the flush WGSL allows; the operands are positive, so -0 is not one), and for any other
/// word an error naming it: a multiply that is wrong is not a flush, and taking it for one would
/// turn its wrong results into accepted platform deviations.
pub fn flushes_subnormals(product: u32) -> Result<bool, String> {
    let [_, _, exact] = SUBNORMAL_PROBE;
    match product {
        p if p == exact => Ok(false),
        0 => Ok(true),
        p => Err(format!(
            "subnormal probe: 2^-100 * 2^-30 returned {p:#010x} ({:e}), neither 2^-130 ({exact:#010x}) nor a flush to +0",
            f32::from_bits(p)
        )),
    }
}

/// The limits a kernel plan depends on, as granted to the device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformLimits {
    pub max_buffer_size: u64,
    pub max_storage_buffer_binding_size: u64,
    pub min_storage_buffer_offset_alignment: u32,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    pub max_compute_workgroup_storage_size: u32,
    /// Bound ops read their parameters at dynamic offsets of this alignment (src/gpu/bound.rs).
    #[serde(default)]
    pub min_uniform_buffer_offset_alignment: u32,
}

/// An adapter's facts, printable by `ninfer-wgpu devices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub vendor: u32,
    pub device: u32,
    pub driver: String,
    pub driver_info: String,
    /// Optional features offered by the adapter that this crate can use.
    pub features: Vec<String>,
    pub has_subgroups: bool,
    pub has_shader_f16: bool,
    /// WGSL's packed_4x8_integer_dot_product language feature (`dot4I8Packed`): always with naga
    /// (it expands the builtin where the driver lacks an instruction), as the browser says there.
    #[serde(default)]
    pub has_packed_dot: bool,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub limits: PlatformLimits,
    pub probes: Probes,
}

impl Platform {
    pub fn from_adapter(
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
        limits: &wgpu::Limits,
        language: wgpu::WgslLanguageFeatures,
    ) -> Platform {
        let mut named = Vec::new();
        for (flag, name) in [
            (wgpu::Features::SUBGROUP, "subgroup"),
            (wgpu::Features::SHADER_F16, "shader-f16"),
            (wgpu::Features::TIMESTAMP_QUERY, "timestamp-query"),
            (wgpu::Features::SHADER_INT64, "shader-int64"),
        ] {
            if features.contains(flag) {
                named.push(name.to_string());
            }
        }
        Platform {
            name: info.name.clone(),
            backend: info.backend.to_str().to_string(),
            device_type: format!("{:?}", info.device_type),
            vendor: info.vendor,
            device: info.device,
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            features: named,
            has_subgroups: features.contains(wgpu::Features::SUBGROUP),
            has_shader_f16: features.contains(wgpu::Features::SHADER_F16),
            has_packed_dot: language.contains(wgpu::WgslLanguageFeatures::Packed4x8IntegerDotProduct),
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            limits: PlatformLimits {
                max_buffer_size: limits.max_buffer_size,
                max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
                min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
                max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
                max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
                max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
                max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
                min_uniform_buffer_offset_alignment: limits.min_uniform_buffer_offset_alignment,
            },
            probes: Probes::default(),
        }
    }

    /// One line for listings: `name (backend, type, driver)`.
    pub fn summary(&self) -> String {
        format!("{} ({}, {}, {} {})", self.name, self.backend, self.device_type, self.driver, self.driver_info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subnormal_probe_tells_a_flush_from_a_wrong_product() {
        assert_eq!(flushes_subnormals(0x0008_0000), Ok(false), "2^-130 kept");
        assert_eq!(flushes_subnormals(0x0000_0000), Ok(true), "flushed to +0");
        // -0, a neighbour of 2^-130, the smallest subnormal, a normal number and NaN: wrong, not flushed.
        for wrong in [0x8000_0000, 0x0008_0001, 0x0000_0001, 0x0080_0000, 0x7FC0_0000] {
            let e = flushes_subnormals(wrong).expect_err("a wrong product is no flush");
            assert!(e.contains(&format!("{wrong:#010x}")), "{e}");
        }
    }
}
