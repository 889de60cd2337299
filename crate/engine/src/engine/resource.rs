//! Resources: the locks and semaphores the host names, registered and forgotten.
//!
//! A resource lives from [`Engine::resource`] until the host forgets it ([`Engine::forget`]), so that
//! a name nobody uses costs nothing either: the host forgets a name once nothing of its own refers to
//! it (no handle, no key it granted itself, no request in flight), and registers it again when it is
//! next asked for. Forgetting is refused while the engine has a busy key of the resource. Ids are
//! generational (see `slab.rs`): a place freed by forgetting is reused by the next name, under
//! another generation, so an id the host kept past forgetting names no resource at all (`invalid`),
//! never another name's. A key keeps only the place of its resource, which cannot be forgotten
//! while the key is busy. The places a forgotten name leaves (in the slab, in `by_name`'s table)
//! serve the names after it, as a key's do: what names cost is that of the most in use at once.

use super::Engine;
use crate::bounds;
use crate::error::Error;
use crate::slab::Id;

/// A lock (one holder a key) or a semaphore (up to its limit). A lock and a semaphore of one name are
/// different things.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Lock,
    Semaphore,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::Semaphore => "semaphore",
        }
    }
}

/// A lock or a semaphore of one name, as [`Engine::resource`] registered it: its place and the
/// generation of the place (see the module docs), which fit a JavaScript number as an [`Id`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResourceId(pub(super) Id);

impl ResourceId {
    /// The id as one integer below 2^53.
    pub fn to_u64(self) -> u64 {
        self.0.to_u64()
    }

    /// The id an earlier [`ResourceId::to_u64`] gave, or `None` when `raw` cannot be one. (Any other
    /// value that can be one names an unknown resource, which the engine refuses as `invalid`.)
    pub fn from_u64(raw: u64) -> Option<ResourceId> {
        Id::from_u64(raw).map(ResourceId)
    }

    /// The place: dense, and reused once the resource is forgotten.
    pub fn index(self) -> u32 {
        self.0.index()
    }
}

#[derive(Debug)]
pub(super) struct Resource {
    pub(super) kind: Kind,
    pub(super) name: String,
    pub(super) limit: u32,
    /// How many of its keys are busy (in `Engine::keys`): it is forgotten only at 0.
    pub(super) busy: u32,
}

pub(super) fn unknown(res: ResourceId) -> Error {
    Error::invalid(format!("unknown resource {}", res.to_u64()))
}

/// Names: the locks and semaphores the host registers and forgets.
impl Engine {
    /// Registers (or finds) the lock or semaphore `name`. A lock's limit is 1. Asking for a semaphore
    /// again with another limit is `invalid`, until it is forgotten.
    pub fn resource(&mut self, kind: Kind, name: &str, limit: u32) -> Result<ResourceId, Error> {
        self.check_open()?;
        bounds::check_name(name)?;
        let limit = match kind {
            Kind::Lock => 1,
            Kind::Semaphore => {
                bounds::check_limit(limit)?;
                limit
            }
        };
        if let Some(&id) = self.by_name.get(&(kind, name.to_owned())) {
            let had = self.resources.get(id.0).expect("a named resource").limit;
            if had != limit {
                return Err(Error::invalid(format!(
                    "semaphore {name}: limit {limit} differs from its limit {had}"
                )));
            }
            return Ok(id);
        }
        let id = ResourceId(self.resources.insert(Resource {
            kind,
            name: name.to_owned(),
            limit,
            busy: 0,
        }));
        self.by_name.insert((kind, name.to_owned()), id);
        Ok(id)
    }

    /// The kind, name and limit of a resource.
    pub fn resource_info(&self, id: ResourceId) -> Option<(Kind, &str, u32)> {
        self.resources
            .get(id.0)
            .map(|r| (r.kind, r.name.as_str(), r.limit))
    }

    /// Forgets a resource the host no longer refers to (see the module docs): its name and place go,
    /// and `id` names nothing from now on (the name registered again gets another id). Refused
    /// (`invalid`, changing nothing) while the engine has a busy key of it: a holder or a waiter, or
    /// a key handed over by [`Engine::adopt`]. The engine does not know the keys the host granted
    /// itself: the host must not forget a resource while it keeps one of them (it could not hand it
    /// over). `invalid` for an unknown resource; `closed` when closed.
    pub fn forget(&mut self, id: ResourceId) -> Result<(), Error> {
        self.check_open()?;
        let Some(resource) = self.resources.get(id.0) else {
            return Err(unknown(id));
        };
        if resource.busy > 0 {
            return Err(Error::invalid(format!(
                "{} {}: {} busy keys; a resource is forgotten only once idle",
                resource.kind.as_str(),
                resource.name,
                resource.busy
            )));
        }
        let resource = self.resources.remove(id.0).expect("just found");
        self.by_name.remove(&(resource.kind, resource.name));
        Ok(())
    }
}
