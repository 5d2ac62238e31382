//! zlib inflate (RFC 1950 around RFC 1951) into a caller's buffer: no allocation, no std, so the
//! first stage stays a few kilobytes of code beside the C library. Written after zlib's
//! `contrib/puff` (canonical Huffman decoding by counts and symbols). Pullpath's own tests run
//! it against miniz_oxide's output (`fleet::deliver`).

/// Why the data did not inflate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Ran out of input.
    Truncated,
    /// The output would not fit the buffer (the size given is wrong).
    TooLong,
    /// Not a zlib stream of deflate data, or a damaged one.
    Corrupt,
    /// Adler-32 differs: a part is damaged.
    Checksum,
}

struct Bits<'a> {
    input: &'a [u8],
    at: usize,
    buffer: u32,
    count: u32,
}

impl Bits<'_> {
    fn need(&mut self, n: u32) -> Result<u32, Error> {
        while self.count < n {
            let byte = *self.input.get(self.at).ok_or(Error::Truncated)?;
            self.at += 1;
            self.buffer |= u32::from(byte) << self.count;
            self.count += 8;
        }
        let value = self.buffer & ((1u32 << n) - 1);
        self.buffer >>= n;
        self.count -= n;
        Ok(value)
    }
}

const MAX_BITS: usize = 15;

struct Huffman {
    counts: [u16; MAX_BITS + 1],
    symbols: [u16; 288],
}

impl Huffman {
    fn new(lengths: &[u8]) -> Result<Huffman, Error> {
        let mut h = Huffman {
            counts: [0; MAX_BITS + 1],
            symbols: [0; 288],
        };
        for &l in lengths {
            h.counts[usize::from(l)] += 1;
        }
        let mut left: i32 = 1;
        for len in 1..=MAX_BITS {
            left = (left << 1) - i32::from(h.counts[len]);
            if left < 0 {
                return Err(Error::Corrupt);
            }
        }
        let mut offsets = [0u16; MAX_BITS + 1];
        for len in 1..MAX_BITS {
            offsets[len + 1] = offsets[len] + h.counts[len];
        }
        for (symbol, &l) in lengths.iter().enumerate() {
            if l != 0 {
                h.symbols[usize::from(offsets[usize::from(l)])] = symbol as u16;
                offsets[usize::from(l)] += 1;
            }
        }
        Ok(h)
    }

    fn decode(&self, bits: &mut Bits) -> Result<u16, Error> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..=MAX_BITS {
            code |= bits.need(1)? as i32;
            let count = i32::from(self.counts[len]);
            if code - count < first {
                return Ok(self.symbols[(index + (code - first)) as usize]);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(Error::Corrupt)
    }
}

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// Inflate the zlib stream `input` into `out`; the number of bytes written.
pub fn zlib(input: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    let header = input.get(..2).ok_or(Error::Truncated)?;
    let (cmf, flg) = (header[0], header[1]);
    if cmf & 0x0f != 8 || (u16::from(cmf) << 8 | u16::from(flg)) % 31 != 0 || flg & 0x20 != 0 {
        return Err(Error::Corrupt);
    }
    let mut bits = Bits {
        input,
        at: 2,
        buffer: 0,
        count: 0,
    };
    let mut written = 0usize;
    loop {
        let last = bits.need(1)?;
        match bits.need(2)? {
            0 => {
                bits.buffer = 0;
                bits.count = 0;
                let at = bits.at;
                let len_bytes = input.get(at..at + 4).ok_or(Error::Truncated)?;
                let len = usize::from(u16::from_le_bytes([len_bytes[0], len_bytes[1]]));
                let nlen = u16::from_le_bytes([len_bytes[2], len_bytes[3]]);
                if len != usize::from(!nlen) {
                    return Err(Error::Corrupt);
                }
                let data = input.get(at + 4..at + 4 + len).ok_or(Error::Truncated)?;
                out.get_mut(written..written + len)
                    .ok_or(Error::TooLong)?
                    .copy_from_slice(data);
                written += len;
                bits.at = at + 4 + len;
            }
            1 => {
                let mut lengths = [0u8; 288 + 30];
                for (i, l) in lengths.iter_mut().enumerate() {
                    *l = match i {
                        0..=143 => 8,
                        144..=255 => 9,
                        256..=279 => 7,
                        280..=287 => 8,
                        _ => 5,
                    };
                }
                let lit = Huffman::new(&lengths[..288])?;
                let dist = Huffman::new(&lengths[288..])?;
                written = codes(&mut bits, out, written, &lit, &dist)?;
            }
            2 => {
                let (lit, dist) = dynamic(&mut bits)?;
                written = codes(&mut bits, out, written, &lit, &dist)?;
            }
            _ => return Err(Error::Corrupt),
        }
        if last == 1 {
            break;
        }
    }
    let at = bits.at;
    let sum = input.get(at..at + 4).ok_or(Error::Truncated)?;
    if u32::from_be_bytes([sum[0], sum[1], sum[2], sum[3]]) != adler32(&out[..written]) {
        return Err(Error::Checksum);
    }
    Ok(written)
}

fn dynamic(bits: &mut Bits) -> Result<(Huffman, Huffman), Error> {
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let nlen = bits.need(5)? as usize + 257;
    let ndist = bits.need(5)? as usize + 1;
    let ncode = bits.need(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return Err(Error::Corrupt);
    }
    let mut lengths = [0u8; 320];
    for &slot in &ORDER[..ncode] {
        lengths[slot] = bits.need(3)? as u8;
    }
    let code = Huffman::new(&lengths[..19])?;
    let mut lengths = [0u8; 320];
    let mut i = 0;
    while i < nlen + ndist {
        let symbol = code.decode(bits)?;
        if symbol < 16 {
            lengths[i] = symbol as u8;
            i += 1;
            continue;
        }
        let (value, repeat) = match symbol {
            16 => {
                // A repeat with nothing before it: `get` of `usize::MAX` is `None`.
                let previous = *lengths.get(i.wrapping_sub(1)).ok_or(Error::Corrupt)?;
                (previous, 3 + bits.need(2)? as usize)
            }
            17 => (0, 3 + bits.need(3)? as usize),
            _ => (0, 11 + bits.need(7)? as usize),
        };
        if i + repeat > nlen + ndist {
            return Err(Error::Corrupt);
        }
        lengths[i..i + repeat].fill(value);
        i += repeat;
    }
    if lengths[256] == 0 {
        return Err(Error::Corrupt);
    }
    Ok((
        Huffman::new(&lengths[..nlen])?,
        Huffman::new(&lengths[nlen..nlen + ndist])?,
    ))
}

fn codes(
    bits: &mut Bits,
    out: &mut [u8],
    mut written: usize,
    lit: &Huffman,
    dist: &Huffman,
) -> Result<usize, Error> {
    loop {
        let symbol = usize::from(lit.decode(bits)?);
        if symbol < 256 {
            *out.get_mut(written).ok_or(Error::TooLong)? = symbol as u8;
            written += 1;
        } else if symbol == 256 {
            return Ok(written);
        } else {
            let s = symbol - 257;
            if s >= 29 {
                return Err(Error::Corrupt);
            }
            let len = usize::from(LENGTH_BASE[s]) + bits.need(u32::from(LENGTH_EXTRA[s]))? as usize;
            let d = usize::from(dist.decode(bits)?);
            if d >= 30 {
                return Err(Error::Corrupt);
            }
            let back = usize::from(DIST_BASE[d]) + bits.need(u32::from(DIST_EXTRA[d]))? as usize;
            if back > written {
                return Err(Error::Corrupt);
            }
            if written + len > out.len() {
                return Err(Error::TooLong);
            }
            for _ in 0..len {
                out[written] = out[written - back];
                written += 1;
            }
        }
    }
}

/// Adler-32 (RFC 1950).
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}
