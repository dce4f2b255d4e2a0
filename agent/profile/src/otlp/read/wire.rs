//! A look at a request's protobuf before it is decoded: prost makes a `ResourceProfiles`,
//! `ScopeProfiles` or `Profile` of ~100-200 bytes from each 2-byte empty entry, so a message of
//! empty entries would cost ~100 bytes per byte before any budget of [`super::budget`] applies.
//! The containers of the request's first three levels are counted on the wire, without
//! decoding, and a message with more than one per [`BYTES_PER_CONTAINER`] bytes is refused: what
//! a profiler writes has a sample type and samples in every profile, far more than that.

/// Each resource, scope and profile of a message must have this many bytes of it on average...
pub const BYTES_PER_CONTAINER: usize = 64;
/// ... past the first few (a small message of a few small entries is no attack: they cost
/// kilobytes).
const FREE_CONTAINERS: usize = 64;

/// `ExportProfilesServiceRequest.resource_profiles`, `ResourceProfiles.scope_profiles`,
/// `ScopeProfiles.profiles`: field 1, then 2, then 2, each a message (wire type 2).
const PATH: [u64; 3] = [1, 2, 2];

/// Checks that `buf`'s containers are within the bound; the reason in words if not (a damaged
/// message is left to the decoder, which names the problem).
pub fn check_containers(buf: &[u8]) -> Result<(), String> {
    let mut count = 0usize;
    count_level(buf, 0, &mut count);
    let allowed = FREE_CONTAINERS + buf.len() / BYTES_PER_CONTAINER;
    if count > allowed {
        return Err(format!(
            "{count} resources, scopes and profiles in {} bytes: more than one per {BYTES_PER_CONTAINER} bytes, \
             which no profiler writes (empty entries decode to ~100 times their size)",
            buf.len()
        ));
    }
    Ok(())
}

/// Counts the entries of `PATH[level]` in `buf`, and theirs below; stops quietly at damage.
fn count_level(buf: &[u8], level: usize, count: &mut usize) {
    let mut at = 0;
    while at < buf.len() {
        let Some((key, n)) = varint(&buf[at..]) else { return };
        at += n;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => match varint(&buf[at..]) {
                Some((_, n)) => at += n,
                None => return,
            },
            1 => at += 8,
            5 => at += 4,
            2 => {
                let Some((len, n)) = varint(&buf[at..]) else { return };
                at += n;
                let Some(end) = usize::try_from(len).ok().and_then(|l| at.checked_add(l)).filter(|&e| e <= buf.len())
                else {
                    return;
                };
                if field == PATH[level] {
                    *count += 1;
                    if level + 1 < PATH.len() {
                        count_level(&buf[at..end], level + 1, count);
                    }
                }
                at = end;
            }
            _ => return,
        }
    }
}

/// A base-128 varint at the start of `b`: its value and length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
    use opentelemetry_proto::tonic::profiles::v1development::{Profile, ResourceProfiles, ScopeProfiles};
    use prost::Message;

    fn request(resources: usize, scopes: usize, profiles: usize, sample_bytes: usize) -> Vec<u8> {
        let profile = Profile { original_payload: vec![7; sample_bytes], ..Profile::default() };
        let scope = ScopeProfiles { profiles: vec![profile; profiles], ..ScopeProfiles::default() };
        let rp = ResourceProfiles { scope_profiles: vec![scope; scopes], ..ResourceProfiles::default() };
        ExportProfilesServiceRequest { resource_profiles: vec![rp; resources], dictionary: None }.encode_to_vec()
    }

    #[test]
    fn counts_the_three_levels() {
        let mut n = 0;
        count_level(&request(2, 3, 4, 0), 0, &mut n);
        assert_eq!(n, 2 + 2 * 3 + 2 * 3 * 4);
    }

    #[test]
    fn real_sized_profiles_pass_and_empty_ones_are_refused() {
        assert!(check_containers(&request(1, 1, 3, 200)).is_ok());
        assert!(check_containers(&request(2, 3, 4, 0)).is_ok(), "a few small entries are no attack");
        let empty = request(1, 1, 100_000, 0);
        let err = check_containers(&empty).unwrap_err();
        assert!(err.contains("100002 resources, scopes and profiles"), "{err}");
        let empty_resources = request(50_000, 0, 0, 0);
        assert!(check_containers(&empty_resources).is_err());
    }

    #[test]
    fn damage_stops_the_count_not_the_reader() {
        for cut in [1, 5, 17] {
            let buf = request(1, 1, 3, 200);
            let mut n = 0;
            count_level(&buf[..buf.len() - cut], 0, &mut n);
            assert!(n <= 5);
        }
        assert!(check_containers(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_ok());
    }
}
