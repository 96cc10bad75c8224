//! A Y4M clip played as a live camera: a thread pushes its frames into an `appsrc`, in a loop, on
//! the frame-rate grid from the instant it is started, as a camera delivers them whether or not
//! the encoder is ready (the `appsrc` stamps each with the pipeline's running time). How late it
//! delivered each frame against its instant on that grid is kept ([`CameraTiming`]).

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};

use gstreamer as gst;
use gstreamer_app as gst_app;

use rtcbench_live::sys;

use crate::CameraTiming;

/// One frame's bytes, shared by every buffer that carries it (no copy per loop).
#[derive(Clone)]
struct FrameBytes(Arc<Vec<u8>>);

impl AsRef<[u8]> for FrameBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The frames of a Y4M clip (4:2:0, as `rtcbench.browser.chromium.noise_clip` writes it), after
/// checking that its size is `width`x`height`.
pub(crate) fn read_y4m(path: &Path, width: u16, height: u16) -> Result<Vec<Arc<Vec<u8>>>, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let header_end =
        bytes.iter().position(|&b| b == b'\n').ok_or_else(|| format!("{}: no Y4M header", path.display()))?;
    let header = std::str::from_utf8(&bytes[..header_end])
        .map_err(|_| format!("{}: not a Y4M header", path.display()))?;
    let mut fields = header.split(' ');
    if fields.next() != Some("YUV4MPEG2") {
        return Err(format!("{}: not a Y4M clip", path.display()));
    }
    let (mut w, mut h) = (0usize, 0usize);
    for f in fields {
        match f.split_at(1) {
            ("W", v) => w = v.parse().unwrap_or(0),
            ("H", v) => h = v.parse().unwrap_or(0),
            ("C", v) if !v.starts_with("420") => {
                return Err(format!("{}: chroma {v}, not 4:2:0", path.display()))
            }
            _ => {}
        }
    }
    if (w, h) != (usize::from(width), usize::from(height)) {
        return Err(format!("{}: the clip is {w}x{h}, the call's camera {width}x{height}", path.display()));
    }
    let frame_len = w * h * 3 / 2;
    let mut frames = Vec::new();
    let mut at = header_end + 1;
    while at < bytes.len() {
        let line_end = at
            + bytes[at..]
                .iter()
                .position(|&b| b == b'\n')
                .ok_or_else(|| format!("{}: a frame without its header line", path.display()))?;
        if !bytes[at..line_end].starts_with(b"FRAME") || line_end + 1 + frame_len > bytes.len() {
            return Err(format!("{}: frame {} is cut short", path.display(), frames.len()));
        }
        frames.push(Arc::new(bytes[line_end + 1..line_end + 1 + frame_len].to_vec()));
        at = line_end + 1 + frame_len;
    }
    if frames.is_empty() {
        return Err(format!("{}: no frames", path.display()));
    }
    Ok(frames)
}

/// The camera thread. It is spawned when built, so that it runs under the scheduling policy of
/// the moment (the agent takes real-time scheduling after), and waits for [`Self::start`].
pub(crate) struct ClipCamera {
    start: Option<mpsc::Sender<i128>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ClipCamera {
    pub(crate) fn new(
        src: gst_app::AppSrc,
        frames: Vec<Arc<Vec<u8>>>,
        fps: f64,
        timing: CameraTiming,
    ) -> Self {
        let (start, started) = mpsc::channel::<i128>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let period_ns = 1e9 / fps;
        let thread = thread::spawn(move || {
            let Ok(t0) = started.recv() else { return };
            for k in 0u64.. {
                let due = t0 + (k as f64 * period_ns).round() as i128;
                loop {
                    if stopping.load(Ordering::Relaxed) {
                        return;
                    }
                    let left = due - sys::monotonic_ns();
                    if left <= 0 {
                        break;
                    }
                    // At most 100 ms at a time, so that a stop is seen at once.
                    thread::sleep(std::time::Duration::from_nanos(left.min(100_000_000) as u64));
                }
                // A frame delivered late is captured late: the thread was not run at its instant.
                timing.record(sys::monotonic_ns() - due);
                let frame = FrameBytes(Arc::clone(&frames[(k % frames.len() as u64) as usize]));
                if src.push_buffer(gst::Buffer::from_slice(frame)).is_err() {
                    return; // the pipeline is stopping
                }
            }
        });
        Self { start: Some(start), stop, thread: Some(thread) }
    }

    /// Starts delivering frames, the first now.
    pub(crate) fn start(&mut self) {
        if let Some(start) = self.start.take() {
            let _ = start.send(sys::monotonic_ns());
        }
    }

    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.start.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ClipCamera {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clip_is_read_frame_by_frame_and_its_size_checked() {
        let dir = std::env::temp_dir().join(format!("rtcbench-gst-y4m-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clip.y4m");
        let mut bytes = b"YUV4MPEG2 W4 H2 F30:1 Ip A1:1 C420jpeg\n".to_vec();
        for k in 0..3u8 {
            bytes.extend_from_slice(b"FRAME\n");
            bytes.extend(std::iter::repeat_n(k, 12));
        }
        fs::write(&path, &bytes).unwrap();
        let frames = read_y4m(&path, 4, 2).unwrap();
        assert_eq!(frames.len(), 3);
        assert!(frames
            .iter()
            .enumerate()
            .all(|(k, f)| f.len() == 12 && f.iter().all(|&b| usize::from(b) == k)));
        assert!(read_y4m(&path, 640, 360)
            .unwrap_err()
            .contains("the clip is 4x2, the call's camera 640x360"));
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read_y4m(&path, 4, 2).unwrap_err().contains("frame 2 is cut short"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
