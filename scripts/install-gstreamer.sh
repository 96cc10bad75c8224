#!/bin/sh
# Installs Debian's GStreamer for the GStreamer stack (docs/gstreamer.md): the libraries and headers
# that `rtcbench-gst-media` builds against (gstreamer, -base/app, -video, through pkg-config) and the
# plugins its pipeline uses: videotestsrc and appsink (base), vp8enc (good), x264enc (ugly).
# Idempotent: exits 0 at once if all of it is there.
set -eu

complete() {
    pkg-config --exists gstreamer-1.0 gstreamer-app-1.0 gstreamer-video-1.0 2>/dev/null &&
        gst-inspect-1.0 --exists videotestsrc 2>/dev/null &&
        gst-inspect-1.0 --exists vp8enc 2>/dev/null &&
        gst-inspect-1.0 --exists x264enc 2>/dev/null &&
        gst-inspect-1.0 --exists appsink 2>/dev/null
}

if complete; then
    echo "GStreamer already installed: $(gst-launch-1.0 --version | sed -n 2p)"
    exit 0
fi
APT_INSTALL_ALWAYS=1 sh "$(dirname "$0")/apt-install.sh" gst-launch-1.0 \
    pkg-config libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \
    gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly
complete || { echo "install-gstreamer.sh: GStreamer is still incomplete after installing" >&2; exit 1; }
