# A string doubled 40 times: each call twice the last.
package ndp.policy.concat_doubling

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	s0 := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s1 := concat("", [s0, s0])
	s2 := concat("", [s1, s1])
	s3 := concat("", [s2, s2])
	s4 := concat("", [s3, s3])
	s5 := concat("", [s4, s4])
	s6 := concat("", [s5, s5])
	s7 := concat("", [s6, s6])
	s8 := concat("", [s7, s7])
	s9 := concat("", [s8, s8])
	s10 := concat("", [s9, s9])
	s11 := concat("", [s10, s10])
	s12 := concat("", [s11, s11])
	s13 := concat("", [s12, s12])
	s14 := concat("", [s13, s13])
	s15 := concat("", [s14, s14])
	s16 := concat("", [s15, s15])
	s17 := concat("", [s16, s16])
	s18 := concat("", [s17, s17])
	s19 := concat("", [s18, s18])
	s20 := concat("", [s19, s19])
	s21 := concat("", [s20, s20])
	s22 := concat("", [s21, s21])
	s23 := concat("", [s22, s22])
	s24 := concat("", [s23, s23])
	s25 := concat("", [s24, s24])
	s26 := concat("", [s25, s25])
	s27 := concat("", [s26, s26])
	s28 := concat("", [s27, s27])
	s29 := concat("", [s28, s28])
	s30 := concat("", [s29, s29])
	count(s30) > 0
}
