//! A profile's steps: a forward's step recorded with only some kinds of dispatch
//! (`examples/step_profile.rs`, `examples/workgroup_ab.rs`), beside the forward whose private
//! buffers they write.

use super::{check_run, DispatchKind, GpuForward};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::llm::uniforms::Step;

impl GpuForward<'_> {
    /// A profile's step: one token at the current position with only the dispatches of the
    /// kinds `keep` takes (the others' outputs stay as they were: a timing, not a result),
    /// waited for; the position does not move and no logits are read. Returns the dispatches
    /// recorded.
    pub async fn step_only(&mut self, token: u32, keep: &dyn Fn(DispatchKind) -> bool) -> Result<u32> {
        self.columns_only(&[token], keep).await
    }

    /// A profile's prompt step: `tokens` (at most the forward's batch) at the current position,
    /// as [`step_only`](Self::step_only) records one: only the kinds `keep` takes, the last
    /// token's logits, the position unmoved.
    pub async fn columns_only(&mut self, tokens: &[u32], keep: &dyn Fn(DispatchKind) -> bool) -> Result<u32> {
        check_run(&self.config, tokens, self.position, self.context)?;
        if tokens.len() > self.batch as usize {
            return Err(Error::Unsupported(format!(
                "a profile's step of {} tokens: the forward was loaded for batches of at most {}",
                tokens.len(),
                self.batch
            )));
        }
        let gpu: &Gpu = &self.gpu;
        gpu.write(&self.ids, 0, tokens)?;
        let j = tokens.len() as u32;
        let step = Step { columns: j, pos0: self.position as u32, out_from: j - 1, pad: 0 };
        gpu.write(&self.step, 0, bytemuck::cast_slice::<Step, u32>(&[step]))?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let n = self.record(&mut encoder, &self.one, j, 1, keep)?;
        gpu.submit(encoder).await?;
        gpu.wait()?;
        Ok(n)
    }
}
