//! A period's samples as an OTLP profiles request (skeleton).

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;

use crate::model::{Recording, Sample};

/// Who sent the profile: the resource attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resource {
    pub service: String,
    pub host: Option<String>,
    pub pid: u32,
    pub runtime_name: Option<String>,
    pub runtime_version: Option<String>,
    pub runtime_description: Option<String>,
}

/// The profile of one period, built from the chunks the session writes during it.
#[derive(Default)]
pub struct PeriodBuilder {
    start_unix_ns: u64,
    samples: u64,
}

impl PeriodBuilder {
    pub fn new(start_unix_ns: u64) -> Self {
        PeriodBuilder { start_unix_ns, samples: 0 }
    }

    /// Adds a chunk's samples.
    pub fn add(&mut self, rec: &Recording, samples: &[Sample]) {
        let _ = rec;
        self.samples += samples.iter().map(|s| u64::from(s.repeat.max(1))).sum::<u64>();
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    pub fn approx_bytes(&self) -> usize {
        0
    }

    /// The period's request; the builder is reset for the next period.
    pub fn finish(&mut self, end_unix_ns: u64, resource: &Resource) -> ExportProfilesServiceRequest {
        let _ = (end_unix_ns, resource);
        *self = PeriodBuilder::new(end_unix_ns);
        let _ = self.start_unix_ns;
        ExportProfilesServiceRequest::default()
    }
}

/// A whole recording as one request.
pub fn encode_recording(rec: &Recording, resource: &Resource) -> ExportProfilesServiceRequest {
    let mut b = PeriodBuilder::new(rec.start_wall_ns);
    b.add(rec, &rec.samples);
    b.finish(rec.start_wall_ns, resource)
}
