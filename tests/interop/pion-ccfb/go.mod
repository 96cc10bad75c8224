module rtcbench.test/pion-ccfb

go 1.22

require github.com/pion/rtcp v1.2.15
