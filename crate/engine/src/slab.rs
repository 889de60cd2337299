//! A slab of values named by generational ids.
//!
//! Freed places are reused (so a store that held a million distinct keys one after another keeps one
//! place, not a million), and each reuse bumps the place's generation, so an id that outlived its value
//! never reaches the value that took its place. Ids fit a JavaScript number exactly: the index in the low
//! 32 bits, the generation in the 21 bits above (it wraps; an id would have to survive two million reuses
//! of its place to be mistaken).
//!
//! # Pages
//! Places live in pages of [`PAGE`] places, not in one `Vec`: a `Vec` that doubles copies itself
//! into a new block and frees the old one, and wasm linear memory never shrinks, so a slab of a
//! million places in one `Vec` cost up to half as much again in blocks left behind (and up to twice
//! its places in capacity). A page, once full, is never moved, and the next one is a block of its
//! own: a slab costs its places and at most one page more. The first page grows as a `Vec` does, so
//! a store with few keys keeps few places.

/// Generations wrap within 21 bits, so that `gen << 32 | index` stays below 2^53.
const GEN_MASK: u32 = (1 << 21) - 1;

/// Places a page (a power of two): the index's low bits name the place in its page.
const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

/// The name of a value in a [`Slab`]: an index and the generation the place had when the value came.
/// Ids order by index, then generation (the timers break ties of deadlines by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id {
    index: u32,
    gen: u32,
}

impl Id {
    /// The id as one integer below 2^53, for hosts whose numbers are doubles.
    pub fn to_u64(self) -> u64 {
        (u64::from(self.gen) << 32) | u64::from(self.index)
    }

    /// The id an earlier [`Id::to_u64`] gave, or `None` when `raw` cannot be one.
    pub fn from_u64(raw: u64) -> Option<Id> {
        let gen = raw >> 32;
        if gen > u64::from(GEN_MASK) {
            return None;
        }
        Some(Id {
            index: raw as u32,
            gen: gen as u32,
        })
    }

    /// The place in the slab; dense, so a host can keep its own records in an array by it.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the place when the value came: below 2^21.
    pub(crate) fn gen(self) -> u32 {
        self.gen
    }

    /// The id of `index` and `gen`, as [`Id::index`] and [`Id::gen`] gave them.
    pub(crate) fn from_parts(index: u32, gen: u32) -> Id {
        debug_assert!(gen <= GEN_MASK);
        Id { index, gen }
    }
}

struct Place<T> {
    gen: u32,
    value: Option<T>,
}

/// Pages of places with a free list. Every page but the last is full.
pub struct Slab<T> {
    pages: Vec<Vec<Place<T>>>,
    free: Vec<u32>,
    len: usize,
    /// Places in all pages.
    places: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            pages: Vec::new(),
            free: Vec::new(),
            len: 0,
            places: 0,
        }
    }
}

/// The page of place `index`, and its place in the page.
fn split(index: u32) -> (usize, usize) {
    ((index >> PAGE_BITS) as usize, index as usize & (PAGE - 1))
}

impl<T> Slab<T> {
    pub fn insert(&mut self, value: T) -> Id {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let place = self.place_mut(index).expect("a free place");
            debug_assert!(place.value.is_none());
            place.value = Some(value);
            return Id {
                index,
                gen: place.gen,
            };
        }
        let index = u32::try_from(self.places).expect("slab: more than 2^32 places");
        if self.pages.last().is_none_or(|page| page.len() == PAGE) {
            // The first page grows as it fills; every later one is allocated whole, once.
            let capacity = if self.pages.is_empty() { 0 } else { PAGE };
            self.pages.push(Vec::with_capacity(capacity));
        }
        let page = self.pages.last_mut().expect("a page with room");
        page.push(Place {
            gen: 0,
            value: Some(value),
        });
        self.places += 1;
        Id { index, gen: 0 }
    }

    fn place(&self, index: u32) -> Option<&Place<T>> {
        let (page, at) = split(index);
        self.pages.get(page)?.get(at)
    }

    fn place_mut(&mut self, index: u32) -> Option<&mut Place<T>> {
        let (page, at) = split(index);
        self.pages.get_mut(page)?.get_mut(at)
    }

    pub fn get(&self, id: Id) -> Option<&T> {
        match self.place(id.index) {
            Some(place) if place.gen == id.gen => place.value.as_ref(),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, id: Id) -> Option<&mut T> {
        match self.place_mut(id.index) {
            Some(place) if place.gen == id.gen => place.value.as_mut(),
            _ => None,
        }
    }

    pub fn remove(&mut self, id: Id) -> Option<T> {
        let place = self.place_mut(id.index)?;
        if place.gen != id.gen {
            return None;
        }
        let value = place.value.take()?;
        place.gen = (place.gen + 1) & GEN_MASK;
        self.free.push(id.index);
        self.len -= 1;
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// How many places the slab has, used or free: what it costs in memory.
    pub fn capacity(&self) -> usize {
        self.places
    }

    fn all(&self) -> impl Iterator<Item = &Place<T>> {
        self.pages.iter().flatten()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Id, &T)> {
        self.all().enumerate().filter_map(|(index, place)| {
            place.value.as_ref().map(|value| {
                (
                    Id {
                        index: index as u32,
                        gen: place.gen,
                    },
                    value,
                )
            })
        })
    }

    /// Empties the slab. Generations go on growing, so ids from before stay dead.
    pub fn clear(&mut self) {
        for (index, place) in self.pages.iter_mut().flatten().enumerate() {
            if place.value.take().is_some() {
                place.gen = (place.gen + 1) & GEN_MASK;
                self.free.push(index as u32);
            }
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_place_is_reused_and_its_old_id_is_dead() {
        let mut slab = Slab::default();
        let a = slab.insert("a");
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_eq!(a.index(), b.index());
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.remove(a), None);
        assert_eq!(slab.get(b), Some(&"b"));
        assert_eq!(slab.capacity(), 1);
    }

    #[test]
    fn places_span_pages_and_keep_their_ids() {
        let mut slab = Slab::default();
        let n = 2 * PAGE + 3;
        let ids: Vec<Id> = (0..n).map(|i| slab.insert(i)).collect();
        assert_eq!((slab.len(), slab.capacity(), slab.pages.len()), (n, n, 3));
        assert!(slab.pages[1..].iter().all(|page| page.capacity() == PAGE));
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!((id.index() as usize, slab.get(id)), (i, Some(&i)));
        }
        let listed: Vec<(Id, usize)> = slab.iter().map(|(id, &v)| (id, v)).collect();
        assert_eq!(listed, ids.iter().copied().zip(0..n).collect::<Vec<_>>());
        // A place freed on the second page is reused before a new one is made.
        let last = ids[PAGE + 1];
        assert_eq!(slab.remove(last), Some(PAGE + 1));
        *slab.get_mut(ids[PAGE]).unwrap() += 1;
        assert_eq!(slab.get(ids[PAGE]), Some(&(PAGE + 1)));
        let again = slab.insert(7);
        assert_eq!(
            (again.index(), slab.get(last), slab.capacity()),
            (last.index(), None, n)
        );
        slab.clear();
        assert_eq!(
            (slab.len(), slab.iter().count(), slab.get(again)),
            (0, 0, None)
        );
        assert_eq!(slab.capacity(), n);
    }

    #[test]
    fn ids_round_trip_through_a_javascript_number() {
        let mut slab = Slab::default();
        let mut id = slab.insert(0);
        for _ in 0..5 {
            slab.remove(id);
            id = slab.insert(0);
        }
        let raw = id.to_u64();
        assert!(raw < (1 << 53));
        assert_eq!(Id::from_u64(raw), Some(id));
        assert_eq!(Id::from_u64(1 << 60), None);
    }

    /// A place adds its generation to the value (see `Request` in `engine.rs`).
    #[test]
    fn a_place_of_a_request_is_its_record_and_a_generation() {
        let size = std::mem::size_of::<Place<crate::engine::Request>>();
        #[cfg(target_pointer_width = "32")]
        assert_eq!(size, 56);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(size, 64);
    }
}
