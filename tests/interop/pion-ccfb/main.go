// Command pion-ccfb decodes the RFC 8888 congestion control feedback in an rtcbench capture with
// Pion's RTCP library (github.com/pion/rtcp), an implementation independent of rtcbench's, and
// prints one JSON object per reported packet:
//
//	{"frame":N,"t_us":T,"sender_ssrc":S,"report_timestamp":RTS,"media_ssrc":M,"seq":Q,"received":B,"ecn":E,"ato":A}
//
// It exists because Debian 12's tshark (Wireshark 4.0) has no RFC 8888 dissector. The capture is
// a classic pcap file of raw IPv4 packets (link type 101), as rtcbench writes them.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pion/rtcp"
)

const (
	pcapGlobalHeaderLen = 24
	pcapRecordHeaderLen = 16
	linkTypeRaw         = 101
	ipv4HeaderLen       = 20
	udpHeaderLen        = 8
)

type report struct {
	Frame           int    `json:"frame"`
	TimeMicros      int64  `json:"t_us"`
	SenderSSRC      uint32 `json:"sender_ssrc"`
	ReportTimestamp uint32 `json:"report_timestamp"`
	MediaSSRC       uint32 `json:"media_ssrc"`
	Seq             uint16 `json:"seq"`
	Received        bool   `json:"received"`
	ECN             uint8  `json:"ecn"`
	ATO             uint16 `json:"ato"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pion-ccfb CAPTURE.pcap")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pion-ccfb:", err)
		os.Exit(1)
	}
}

func run(path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	global := make([]byte, pcapGlobalHeaderLen)
	if _, err := io.ReadFull(r, global); err != nil {
		return fmt.Errorf("pcap header: %w", err)
	}
	if lt := binary.LittleEndian.Uint32(global[20:]); lt != linkTypeRaw {
		return fmt.Errorf("link type %d, want %d (raw IPv4)", lt, linkTypeRaw)
	}
	enc := json.NewEncoder(out)
	record := make([]byte, pcapRecordHeaderLen)
	for frame := 1; ; frame++ {
		if _, err := io.ReadFull(r, record); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("frame %d: %w", frame, err)
		}
		data := make([]byte, binary.LittleEndian.Uint32(record[8:]))
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("frame %d: %w", frame, err)
		}
		t := int64(binary.LittleEndian.Uint32(record[0:]))*1_000_000 + int64(binary.LittleEndian.Uint32(record[4:]))
		if err := decodeFrame(frame, t, data, enc); err != nil {
			return fmt.Errorf("frame %d: %w", frame, err)
		}
	}
}

// decodeFrame prints the CCFB reports of one IPv4/UDP datagram; RTP is skipped (RFC 5761 §4:
// payload types 200-207 in the second byte are RTCP).
func decodeFrame(frame int, t int64, ip []byte, enc *json.Encoder) error {
	if len(ip) < ipv4HeaderLen+udpHeaderLen+2 {
		return fmt.Errorf("%d bytes is too short for IPv4/UDP", len(ip))
	}
	payload := ip[ipv4HeaderLen+udpHeaderLen:]
	if pt := payload[1]; pt < 200 || pt > 207 {
		return nil
	}
	packets, err := rtcp.Unmarshal(payload)
	if err != nil {
		return fmt.Errorf("RTCP: %w", err)
	}
	for _, p := range packets {
		ccfb, ok := p.(*rtcp.CCFeedbackReport)
		if !ok {
			continue
		}
		for _, block := range ccfb.ReportBlocks {
			for i, m := range block.MetricBlocks {
				err := enc.Encode(report{
					Frame:           frame,
					TimeMicros:      t,
					SenderSSRC:      ccfb.SenderSSRC,
					ReportTimestamp: ccfb.ReportTimestamp,
					MediaSSRC:       block.MediaSSRC,
					Seq:             block.BeginSequence + uint16(i),
					Received:        m.Received,
					ECN:             uint8(m.ECN),
					ATO:             m.ArrivalTimeOffset,
				})
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}
