//! A slab of values named by generational ids.
//!
//! Freed places are reused (so a store that held a million distinct keys one after another keeps one
//! place, not a million), and each reuse bumps the place's generation, so an id that outlived its value
//! never reaches the value that took its place. Ids fit a JavaScript number exactly: the index in the low
//! 32 bits, the generation in the 21 bits above (it wraps; an id would have to survive two million reuses
//! of its place to be mistaken).
//!
//! # Pages
//! Places live in pages, not in one `Vec`: a `Vec` that doubles copies itself into a new block and
//! frees the old one, and wasm linear memory never shrinks, so a slab of a million places in one `Vec`
//! cost up to half as much again in blocks left behind. A page is allocated whole and never moved.
//! Page `k` holds `FIRST << k` places, so the pages double as a `Vec` would (a slab's capacity is
//! less than twice its places, and a store with few keys keeps few places), and the memory grows in
//! as few steps: each step of wasm memory may cost the JS host a garbage collection, so many small
//! pages would make a million grants several times slower on Node.

/// Generations wrap within 21 bits, so that `gen << 32 | index` stays below 2^53.
const GEN_MASK: u32 = (1 << 21) - 1;

/// Places in the first page, as a power of two; each next page holds twice as many as the one before.
const FIRST_BITS: u32 = 4;
const FIRST: u64 = 1 << FIRST_BITS;

/// The name of a value in a `Slab`: an index and the generation the place had when the value came.
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

/// Pages of places with a free list. Every page but the last is full; see the module docs.
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

/// How many places page `page` holds.
fn page_size(page: usize) -> usize {
    (FIRST << page) as usize
}

/// The page of place `index`, and its place in the page: pages before page `k` hold
/// `FIRST * (2^k - 1)` places, so `index + FIRST` has its highest bit at `k + FIRST_BITS`.
fn split(index: u32) -> (usize, usize) {
    let shifted = u64::from(index) + FIRST;
    let top = 63 - shifted.leading_zeros();
    ((top - FIRST_BITS) as usize, (shifted - (1 << top)) as usize)
}

impl<T> Slab<T> {
    /// What one place takes: the value and the place's generation (for tests of what a record
    /// costs, as `engine/request.rs` measures a request's).
    #[cfg(test)]
    pub const PLACE_SIZE: usize = std::mem::size_of::<Place<T>>();

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
        let last = self.pages.len().checked_sub(1);
        if last.is_none_or(|k| self.pages[k].len() == page_size(k)) {
            self.pages
                .push(Vec::with_capacity(page_size(self.pages.len())));
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

    /// The value at place `index`, whatever its generation: for records that keep only the index of
    /// a value that cannot go while they live.
    pub fn get_at(&self, index: u32) -> Option<&T> {
        self.place(index)?.value.as_ref()
    }

    /// The id of the value at place `index`, if one is there.
    pub fn id_at(&self, index: u32) -> Option<Id> {
        let place = self.place(index)?;
        place.value.as_ref().map(|_| Id {
            index,
            gen: place.gen,
        })
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

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.pages
            .iter_mut()
            .flatten()
            .filter_map(|place| place.value.as_mut())
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
    fn an_index_names_a_place_of_a_page_and_pages_double() {
        let f = FIRST as usize;
        assert_eq!(
            (page_size(0), page_size(1), page_size(3)),
            (f, 2 * f, 8 * f)
        );
        assert_eq!(split(0), (0, 0));
        assert_eq!(split(f as u32 - 1), (0, f - 1));
        assert_eq!(split(f as u32), (1, 0));
        assert_eq!(split(3 * f as u32 - 1), (1, 2 * f - 1));
        assert_eq!(split(3 * f as u32), (2, 0));
        let (page, at) = split(u32::MAX);
        assert!(at < page_size(page));
        // Every index up to a few pages is the next place after the one before.
        let mut next = (0, 0);
        for index in 0..(f * 100) as u32 {
            assert_eq!(split(index), next);
            next = if next.1 + 1 == page_size(next.0) {
                (next.0 + 1, 0)
            } else {
                (next.0, next.1 + 1)
            };
        }
    }

    #[test]
    fn places_span_pages_and_keep_their_ids() {
        let mut slab = Slab::default();
        let f = FIRST as usize;
        let n = 7 * f + 3; // pages of f, 2f, 4f full, and 3 places on the fourth
        let ids: Vec<Id> = (0..n).map(|i| slab.insert(i)).collect();
        assert_eq!((slab.len(), slab.capacity(), slab.pages.len()), (n, n, 4));
        for (k, page) in slab.pages.iter().enumerate() {
            assert_eq!(page.capacity(), page_size(k), "a page is allocated whole");
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!((id.index() as usize, slab.get(id)), (i, Some(&i)));
        }
        let listed: Vec<(Id, usize)> = slab.iter().map(|(id, &v)| (id, v)).collect();
        assert_eq!(listed, ids.iter().copied().zip(0..n).collect::<Vec<_>>());
        // A place freed on the third page is reused before a new one is made.
        let freed = ids[3 * f + 1];
        assert_eq!(slab.remove(freed), Some(3 * f + 1));
        *slab.get_mut(ids[3 * f]).unwrap() += 1;
        assert_eq!(slab.get(ids[3 * f]), Some(&(3 * f + 1)));
        let again = slab.insert(7);
        assert_eq!(
            (again.index(), slab.get(freed), slab.capacity()),
            (freed.index(), None, n)
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
}
