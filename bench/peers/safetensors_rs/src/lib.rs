// C entry point for ingot's open benchmark: open + mmap + SafeTensors::deserialize + tensor(name)
// + drop + munmap + close, the way a Rust user opens a file; returns the tensor count or -1.
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

#[no_mangle]
pub extern "C" fn st_peer_open_find(path: *const c_char, name: *const c_char) -> c_int {
    let (p, n) = unsafe { (CStr::from_ptr(path), CStr::from_ptr(name)) };
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return -1;
    }
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        unsafe { libc::close(fd) };
        return -1;
    }
    let len = st.st_size as usize;
    let m = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
    if m == libc::MAP_FAILED {
        unsafe { libc::close(fd) };
        return -1;
    }
    let buf = unsafe { std::slice::from_raw_parts(m as *const u8, len) };
    let r = match safetensors::SafeTensors::deserialize(buf) {
        Ok(t) => match n.to_str().ok().map(|s| t.tensor(s)) {
            Some(Ok(v)) => {
                std::hint::black_box(v.data());
                t.len() as c_int
            }
            _ => -1,
        },
        Err(_) => -1,
    };
    unsafe {
        libc::munmap(m, len);
        libc::close(fd);
    }
    r
}
