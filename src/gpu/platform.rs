//! What an adapter is and can do: identity, the optional features we use, the limits we run
//! under, and what the probes found.

use serde::{Deserialize, Serialize};

/// Results of the probe kernels run when a device opens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probes {
    /// `Some(true)` when an f32 multiply whose exact result is subnormal returned zero.
    pub flushes_subnormal_results: Option<bool>,
    /// `Some(true)` when subgroups are runs of at least 4 consecutive invocations with a size
    /// dividing the products' `kernels::MATMUL_WG`.
    pub subgroups_contiguous: Option<bool>,
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
            },
            probes: Probes::default(),
        }
    }

    /// One line for listings: `name (backend, type, driver)`.
    pub fn summary(&self) -> String {
        format!("{} ({}, {}, {} {})", self.name, self.backend, self.device_type, self.driver, self.driver_info)
    }
}
