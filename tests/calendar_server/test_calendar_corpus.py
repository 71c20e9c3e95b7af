"""Issue 27, point 8: every test calendar of the icalendar and recurring-ical-events sdists
through the local calendar (import, reads over several windows, one across each DST change,
export, re-import), each occurrence checked against ical, an independent implementation.

What may differ is listed, with its RFC 5545 reason: ``EXPECTED`` (an invalid event skipped,
or ical reading the file otherwise) stays; ``ON_BASE`` names what the calendar got wrong on the
commit the harness was written on (c978e9b): a fix makes its rows fail ("no longer differs"),
and they go. A difference in neither table fails, with its details. tests/calendar_server/
corpus.py does the work; ``python -m bench.calendar_corpus`` prints the figures.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from calendar_server import corpus

pytestmark = [
    pytest.mark.anyio,
    # icalendar guessing "/mozilla.org/.../America/New_York" as America/New_York: said once
    # per file, the guess is what the corpus checks.
    pytest.mark.filterwarnings("ignore:Timezone .* is a globally unique TZID"),
]

# Over this size a file runs in the bench, and here with CALENDAR_CORPUS_FULL=1: the one such
# file (recurring-ical-events' benchmark/issue42.ics, 1.6 MB, 4778 events, a speed test of that
# library) costs ~20 s of CPU once imported, more than the rest of the corpus together.
LARGE = 1_000_000
FILES = corpus.calendars()
# The sdists' calendars their wheels leave out (the same bytes otherwise).
SDIST_ONLY = {"icalendar/docs/tutorials/example.ics", "recurring-ical-events/benchmark/issue42.ics"}

# --- what may differ, and why (RFC 5545 sections) ---

# Events the calendar skips: they are not valid, and nothing in them can be shown.
NO_START = "3.6.1: DTSTART is required in a VEVENT (no METHOD): an event without a start"
BAD_START = "3.3.5/3.1: DTSTART's value (or its parameters) is no DATE-TIME: no start"
BAD_RULE = "3.3.10: FREQ is required and names one of 7 frequencies; UNTL is no rule part"
RSCALE = "RFC 7529 RSCALE rules are no RFC 5545 RRULE: dateutil cannot expand them"
MIXED_TYPES = "3.8.2.2: DTEND MUST have DTSTART's value type (DATE vs DATE-TIME)"
END_BEFORE_START = "3.8.2.2: DTEND MUST be later than DTSTART"
BAD_DURATION = "3.3.6: P999999999999999999W is no duration a calendar can hold"
BAD_EXDATE = "3.8.5.1: an empty EXDATE value: which occurrences are cancelled is unknown"
BAD_RDATE = "3.3.9: 199709T180000Z is no DATE-TIME: the RDATE period cannot be read"
NOT_ICALENDAR = "3.4/3.6: no END:VCALENDAR, or fuzzed bytes: no iCalendar object to import"
# Occurrences where ical, not the calendar, departs from RFC 5545.
ICAL_RDATE_START = (
    "3.8.5.2/3.6.1: DTSTART is the first instance of the recurrence set; ical leaves it out "
    "when the set is RDATEs only (PERIODs here)"
)
ICAL_CUSTOM_ZONE = (
    "3.6.5: a VTIMEZONE's own observances define TZID=MyTimezone; ical, not knowing the "
    "name, reads the times as UTC"
)
ICAL_WINDOWS_ZONE = (
    '3.6.5: the file\'s VTIMEZONE defines TZID="Tokyo Standard Time" (+09:00; Exchange '
    "2010); ical, with no END:VCALENDAR read whole, then reads the time as UTC"
)
ICAL_OVERRIDE_RRULE = (
    "3.8.4.4/3.8.5.3: a RECURRENCE-ID component replaces one instance and starts no series "
    "(its RRULE means nothing; an override older than the master's SEQUENCE is dropped, "
    "as recurring-ical-events' issues 164/253 decide); ical expands the override's RRULE"
)
ICAL_RID_VALUE = (
    "3.8.4.4: RECURRENCE-ID 20200917T120000Z is the instance at 14:00 Europe/Berlin (the "
    "same instant; a date series' RECURRENCE-ID taken as its date); ical compares the "
    "literal values and shows the replaced instance too"
)
NESTED_VEVENT = (
    "3.6: a VEVENT inside an unknown component (MYCOMPTOO), no VCALENDAR: the import "
    "reads it, ical does not (nothing in RFC 5545 says either way)"
)

# --- product bugs on c978e9b (owner: issue 27's point) ---

WHOLE_FILE = "point 1: one event the import refuses refuses the whole file, valid events too"
NO_UID = "point 1: no UID (3.8.4.7 requires one; producers omit it): derive a stable one"
EMPTY_RRULE = "point 1: an empty RRULE line (no FREQ): no recurrence, import a single event"
UNTIL_TYPE = "point 1: UNTIL of another type than DTSTART (3.3.10 SHOULD): normalize it"
TWO_RRULES = "point 1: two RRULE lines (RFC 2445 allowed them; 5545 SHOULD NOT) refused"
ORPHAN_OVERRIDES = "point 1: changed occurrences without their series: import as single events"
REPEATED_UID = "point 1: a repeated master UID: keep the highest SEQUENCE (3.8.7.4)"
BAD_CREATED = "point 1: a bad CREATED value (0000-12-31) refuses the event: ignore it, warn"
BAD_LINE = "point 1: an unparseable line (3.1) outside DTSTART/RRULE: ignore it, warn"
SEVERAL_VCALENDARS = "point 1: several VCALENDAR objects in one file (3.4 allows a stream)"
UNUSED_VTIMEZONE = "point 1: a historic VTIMEZONE observance (TZOFFSET +5744) no event needs"
TWO_DTSTARTS = "point 1: two DTSTART lines: AttributeError (times.supported gets a list)"
DTEND_AND_DURATION = "point 1: DTEND with DURATION (3.6.1 allows one): icalendar InvalidCalendar"
RDATE_TIME = "point 3: RDATE;VALUE=TIME: TypeError in dateutil on every read of the range"
SAME_DAY_END = (
    "point 3: DTEND = DTSTART on an all-day event (3.8.2.2: later; 3.6.1: one day): the "
    "end is the start, an inclusive last day before the first"
)
CUSTOM_ZONE_AS_UTC = (
    "point 2: a custom VTIMEZONE (TZID=/Europe/CUSTOM) is stored as the first instant in "
    "UTC: after the DST change every occurrence is an hour early"
)
WINDOWS_ZONE_NAME = (
    "point 2: a Windows TZID (Eastern Standard Time) is kept as a UTC instant: the occurrence "
    "names UTC, not America/New_York (and a series drifts an hour at DST)"
)
CUSTOM_ZONE_NAME = (
    "point 2: a custom VTIMEZONE's TZID (MyTimezone, Western/Central Europe, UTC+11) is kept "
    "as a UTC instant: the occurrence names UTC"
)
FLOATING_UNTIL = (
    "point 4: floating DTSTART read in CALENDAR_TIMEZONE keeps its floating UNTIL: the "
    "export cannot be imported again"
)

# file | event | kind | reason: I/ is icalendar/tests/, R/ recurring_ical_events/test/calendars/;
# a file on its own line continues on the next; an event ending in … is a UID's beginning.
EXPECTED = corpus.table(
    """
I/calendars/big_bad_calendar.ics | * | refused | NOT_ICALENDAR
I/calendars/big_bad_calendar.ics | not an iCalendar file | skipped | NOT_ICALENDAR
I/calendars/broken_dtstart.ics | event 1 | skipped | BAD_START
I/calendars/broken_ical.ics | event 1 | skipped | BAD_START
I/calendars/fuzz_testcase_0_char_in_component_name.ics | * | refused | NOT_ICALENDAR
I/calendars/fuzz_testcase_0_char_in_component_name.ics
    | not an iCalendar file | skipped | NOT_ICALENDAR
I/calendars/fuzz_testcase_invalid_month.ics | * | refused | NOT_ICALENDAR
I/calendars/fuzz_testcase_invalid_month.ics | not an iCalendar file | skipped | NOT_ICALENDAR
I/calendars/fuzz_testcase_vtimezone_lone_cr.ics | * | refused | NOT_ICALENDAR
I/calendars/fuzz_testcase_vtimezone_lone_cr.ics | not an iCalendar file | skipped | NOT_ICALENDAR
I/calendars/invalid_duration.ics | event 1 | skipped | BAD_DURATION
I/calendars/issue_1050_uid_in_description.ics | event 1 | skipped | NO_START
I/calendars/issue_1050_uid_in_description.ics | event 2 | skipped | NO_START
I/calendars/issue_1081_invalid_rrule_freq.ics | event 1 | skipped | BAD_RULE
I/calendars/issue_1081_invalid_start_and_end.ics | event 1 | skipped | BAD_START
I/calendars/issue_1081_invalid_start_valid_end.ics | event 1 | skipped | BAD_START
I/calendars/issue_1081_with_summary.ics | event 1 | skipped | NO_START
I/calendars/issue_1426.ics | 77D80D14-906B-4257-963F-85B1E734DBB6 | extra | ICAL_RDATE_START
I/calendars/issue_1549_binary_attachment.ics | event 1 | skipped | NO_START
I/calendars/issue_1561_image_value.ics | event 1 | skipped | NO_START
I/calendars/issue_1561_image_value.ics | event 2 | skipped | NO_START
I/calendars/issue_1561_image_value.ics | event 3 | skipped | NO_START
I/calendars/issue_1561_image_value.ics | event 4 | skipped | NO_START
I/calendars/issue_165_missing_event.ics | event 1 | skipped | BAD_RULE
I/calendars/issue_178_custom_component_contains_other.ics | 12345 | extra | NESTED_VEVENT
I/calendars/issue_722_timezone_transition_ambiguity.ics | 0 | extra | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 0 | missing | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 1 | extra | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 1 | missing | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 2 | extra | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 2 | missing | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 3 | extra | ICAL_CUSTOM_ZONE
I/calendars/issue_722_timezone_transition_ambiguity.ics | 3 | missing | ICAL_CUSTOM_ZONE
I/calendars/parsing_error.ics | event 2 | skipped | BAD_EXDATE
I/calendars/pr_480_summary_with_colon.ics | * | refused | NOT_ICALENDAR
I/calendars/pr_480_summary_with_colon.ics | not an iCalendar file | skipped | NOT_ICALENDAR
I/calendars/rfc_5545_RDATE_example.ics | event 1 | skipped | NO_START
I/calendars/rfc_5545_RDATE_example.ics | event 2 | skipped | NO_START
I/calendars/rfc_5545_RDATE_example.ics | event 3 | skipped | NO_START
I/calendars/rfc_5545_RDATE_example.ics | event 4 | skipped | NO_START
I/calendars/rfc_5545_RDATE_example.ics | event 5 | skipped | NO_START
I/calendars/rfc_5545_RDATE_example.ics | event 6 | skipped | NO_START
I/calendars/rfc_7256_multi_value_parameters.ics | event 1 | skipped | NO_START
I/calendars/rfc_7256_multi_value_parameters.ics | event 2 | skipped | NO_START
I/calendars/rfc_7529.ics | event 1 | skipped | RSCALE
I/calendars/rfc_7529.ics | event 2 | skipped | RSCALE
I/calendars/rfc_7529.ics | event 3 | skipped | RSCALE
I/calendars/rfc_7529.ics | event 4 | skipped | RSCALE
I/calendars/rfc_7986_image.ics | event 1 | skipped | NO_START
I/calendars/rfc_7986_image.ics | event 2 | skipped | NO_START
I/calendars/rfc_9253_gap.ics | event 1 | skipped | NO_START
I/calendars/rfc_9253_gap.ics | event 2 | skipped | NO_START
I/calendars/rfc_9253_related_to.ics | event 1 | skipped | NO_START
I/calendars/small_bad_calendar.ics | * | refused | NOT_ICALENDAR
I/calendars/small_bad_calendar.ics | not an iCalendar file | skipped | NOT_ICALENDAR
I/events/issue_156_RDATE_with_PERIOD.ics | rdate_period | extra | ICAL_RDATE_START
I/events/issue_156_RDATE_with_PERIOD_list.ics | rdate_period | extra | ICAL_RDATE_START
I/events/issue_464_invalid_rdate.ics | event 1 | skipped | BAD_RDATE
R/bad_rrule_missing_until_event.ics | event 1 | skipped | BAD_RULE
R/end_before_start_event.ics | event 1 | skipped | END_BEFORE_START
R/issue_132_swapped_start_and_end.ics | event 1 | skipped | END_BEFORE_START
R/issue_164_duplicated_event.ics | 111 | fewer | ICAL_OVERRIDE_RRULE
R/issue_201_mixed_datetime_and_date.ics | event 1 | skipped | MIXED_TYPES
R/issue_201_test_matrix.ics | event 11 | skipped | MIXED_TYPES
R/issue_201_test_matrix.ics | event 2 | skipped | MIXED_TYPES
R/issue_201_test_matrix.ics | event 3 | skipped | MIXED_TYPES
R/issue_201_test_matrix.ics | event 6 | skipped | MIXED_TYPES
R/issue_253_additional_recurrence_id.ics | 111 | missing | ICAL_OVERRIDE_RRULE
R/issue_253_edge_case_1.ics | 111 | missing | ICAL_OVERRIDE_RRULE
R/issue_253_recurrence_id_included.ics | 111 | missing | ICAL_OVERRIDE_RRULE
R/issue_36_recurrence_ID_format.ics | series 1 | missing | ICAL_RID_VALUE
R/issue_36_recurrence_ID_format.ics | series 2 | missing | ICAL_RID_VALUE
I/calendars/timezone_same_start_and_offset.ics | blafoobar | extra | ICAL_WINDOWS_ZONE
I/calendars/timezone_same_start_and_offset.ics | blafoobar | missing | ICAL_WINDOWS_ZONE
""",
    globals(),
)
ON_BASE = corpus.table(
    """
icalendar/docs/tutorials/example.ics | * | refused | WHOLE_FILE
icalendar/docs/tutorials/example.ics
    | UID d755cef5-2311-46ed-a0e1-6733c9e15c63 | skipped | REPEATED_UID
I/calendars/america_new_york_forward_reference.ics | * | traceback | TWO_DTSTARTS
I/calendars/broken_dtstart.ics | * | refused | WHOLE_FILE
I/calendars/broken_ical.ics | * | refused | WHOLE_FILE
I/calendars/created_calendar_with_unicode_fields.ics | * | refused | WHOLE_FILE
I/calendars/created_calendar_with_unicode_fields.ics | event 2 | skipped | NO_UID
I/calendars/created_calendar_with_unicode_fields.ics | event 3 | skipped | NO_UID
I/calendars/example.ics | 636a0cc1dbd5a1667894465@icalendar | end | SAME_DAY_END
I/calendars/example.ics | 636a0cc1dbfd91667894465@icalendar | end | SAME_DAY_END
I/calendars/example.ics | 636a0cc1dc0f11667894465@icalendar | end | SAME_DAY_END
I/calendars/invalid_duration.ics | * | refused | WHOLE_FILE
I/calendars/issue_104_broken_calendar.ics | * | refused | WHOLE_FILE
I/calendars/issue_104_broken_calendar.ics | not an iCalendar file | skipped | BAD_LINE
I/calendars/issue_1050_multiple_calendars.ics | * | refused | WHOLE_FILE
I/calendars/issue_1050_multiple_calendars.ics
    | not an iCalendar file | skipped | SEVERAL_VCALENDARS
I/calendars/issue_1050_uid_in_description.ics | * | refused | WHOLE_FILE
I/calendars/issue_1081_invalid_rrule_freq.ics | * | refused | WHOLE_FILE
I/calendars/issue_1081_invalid_start_and_end.ics | * | refused | WHOLE_FILE
I/calendars/issue_1081_invalid_start_valid_end.ics | * | refused | WHOLE_FILE
I/calendars/issue_1081_with_summary.ics | * | refused | WHOLE_FILE
I/calendars/issue_1231_recurrence.ics | * | refused | WHOLE_FILE
I/calendars/issue_1231_recurrence.ics | UID test-uid | skipped | ORPHAN_OVERRIDES
I/calendars/issue_1549_binary_attachment.ics | * | refused | WHOLE_FILE
I/calendars/issue_1561_image_value.ics | * | refused | WHOLE_FILE
I/calendars/issue_156_RDATE_with_PERIOD_TZID_khal.ics | * | refused | WHOLE_FILE
I/calendars/issue_156_RDATE_with_PERIOD_TZID_khal.ics | event 1 | skipped | NO_UID
I/calendars/issue_156_RDATE_with_PERIOD_TZID_khal_2.ics | * | refused | WHOLE_FILE
I/calendars/issue_156_RDATE_with_PERIOD_TZID_khal_2.ics
    | UID BF5109494E67AAE20025875100566D31… | skipped | ORPHAN_OVERRIDES
I/calendars/issue_165_missing_event.ics | * | refused | WHOLE_FILE
I/calendars/issue_168_input.ics | * | refused | WHOLE_FILE
I/calendars/issue_168_input.ics | event 1 | skipped | BAD_LINE
I/calendars/issue_237_fail_to_parse_timezone_with_non_ascii_tzid.ics | * | refused | WHOLE_FILE
I/calendars/issue_237_fail_to_parse_timezone_with_non_ascii_tzid.ics | event 1 | skipped | NO_UID
I/calendars/issue_322_expected_calendar.ics | * | refused | WHOLE_FILE
I/calendars/issue_322_expected_calendar.ics | event 1 | skipped | NO_UID
I/calendars/issue_466_respect_unique_timezone.ics
    | 0cab49a0-1167-40f0-bfed-ecb4d117047d | extra | CUSTOM_ZONE_AS_UTC
I/calendars/issue_466_respect_unique_timezone.ics
    | 0cab49a0-1167-40f0-bfed-ecb4d117047d | missing | CUSTOM_ZONE_AS_UTC
I/calendars/issue_722_missing_VTIMEZONE_custom.ics | * | refused | WHOLE_FILE
I/calendars/issue_722_missing_VTIMEZONE_custom.ics | event 1 | skipped | NO_UID
I/calendars/issue_722_missing_timezones.ics | * | refused | WHOLE_FILE
I/calendars/issue_722_missing_timezones.ics | event 1 | skipped | NO_UID
I/calendars/issue_722_missing_timezones.ics | event 2 | skipped | NO_UID
I/calendars/issue_722_missing_timezones.ics | event 3 | skipped | NO_UID
I/calendars/issue_798_related_to.ics | * | refused | WHOLE_FILE
I/calendars/issue_798_related_to.ics | event 1 | skipped | NO_UID
I/calendars/issue_798_related_to.ics | event 2 | skipped | NO_UID
I/calendars/issue_82_expected_output.ics | * | refused | WHOLE_FILE
I/calendars/issue_82_expected_output.ics | event 1 | skipped | NO_UID
I/calendars/multiple_calendar_components.ics | * | refused | WHOLE_FILE
I/calendars/multiple_calendar_components.ics
    | not an iCalendar file | skipped | SEVERAL_VCALENDARS
I/calendars/multiple_timezones.ics | * | traceback | RDATE_TIME
I/calendars/pacific_fiji.ics | * | traceback | TWO_DTSTARTS
I/calendars/parsing_error.ics | * | refused | WHOLE_FILE
I/calendars/parsing_error.ics | event 1 | skipped | NO_UID
I/calendars/parsing_error_in_UTC_offset.ics | * | refused | WHOLE_FILE
I/calendars/parsing_error_in_UTC_offset.ics | not an iCalendar file | skipped | UNUSED_VTIMEZONE
I/calendars/rfc_5545_RDATE_example.ics | * | refused | WHOLE_FILE
I/calendars/rfc_6868.ics | * | refused | WHOLE_FILE
I/calendars/rfc_6868.ics | event 1 | skipped | NO_UID
I/calendars/rfc_7256_multi_value_parameters.ics | * | refused | WHOLE_FILE
I/calendars/rfc_7529.ics | * | refused | WHOLE_FILE
I/calendars/rfc_7986_conferences.ics | * | refused | WHOLE_FILE
I/calendars/rfc_7986_conferences.ics | event 1 | skipped | NO_UID
I/calendars/rfc_7986_image.ics | * | refused | WHOLE_FILE
I/calendars/rfc_9253_gap.ics | * | refused | WHOLE_FILE
I/calendars/rfc_9253_related_to.ics | * | refused | WHOLE_FILE
I/calendars/timezone_rdate.ics | * | refused | WHOLE_FILE
I/calendars/timezone_rdate.ics | event 1 | skipped | BAD_LINE
I/events/event_with_escaped_character1.ics | * | refused | WHOLE_FILE
I/events/event_with_escaped_character1.ics | event 1 | skipped | NO_UID
I/events/event_with_escaped_character2.ics | * | refused | WHOLE_FILE
I/events/event_with_escaped_character2.ics | event 1 | skipped | NO_UID
I/events/event_with_escaped_character3.ics | * | refused | WHOLE_FILE
I/events/event_with_escaped_character3.ics | event 1 | skipped | NO_UID
I/events/event_with_escaped_character4.ics | * | refused | WHOLE_FILE
I/events/event_with_escaped_character4.ics | event 1 | skipped | NO_UID
I/events/event_with_escaped_characters.ics | * | refused | WHOLE_FILE
I/events/event_with_escaped_characters.ics | event 1 | skipped | NO_UID
I/events/event_with_recurrence.ics | * | refused | WHOLE_FILE
I/events/event_with_recurrence.ics | event 1 | skipped | NO_UID
I/events/event_with_recurrence_exdates_on_different_lines.ics | * | refused | WHOLE_FILE
I/events/event_with_recurrence_exdates_on_different_lines.ics | event 1 | skipped | NO_UID
I/events/event_with_rsvp.ics | * | refused | WHOLE_FILE
I/events/event_with_rsvp.ics | event 1 | skipped | NO_UID
I/events/event_with_unicode_organizer.ics | * | refused | WHOLE_FILE
I/events/event_with_unicode_organizer.ics | event 1 | skipped | NO_UID
I/events/issue_100_transformed_doctests_into_unittests.ics | * | refused | WHOLE_FILE
I/events/issue_100_transformed_doctests_into_unittests.ics | event 1 | skipped | NO_UID
I/events/issue_104_mark_events_broken.ics | * | refused | WHOLE_FILE
I/events/issue_104_mark_events_broken.ics | event 1 | skipped | BAD_LINE
I/events/issue_157_removes_trailing_semicolon.ics | * | refused | WHOLE_FILE
I/events/issue_157_removes_trailing_semicolon.ics | event 1 | skipped | NO_UID
I/events/issue_355_url_escaping_empty_param.ics | * | refused | WHOLE_FILE
I/events/issue_355_url_escaping_empty_param.ics | event 1 | skipped | NO_UID
I/events/issue_464_invalid_rdate.ics | * | refused | WHOLE_FILE
I/events/issue_64_event_with_ascii_summary.ics | * | refused | WHOLE_FILE
I/events/issue_64_event_with_ascii_summary.ics | event 1 | skipped | NO_UID
I/events/issue_64_event_with_non_ascii_summary.ics | * | refused | WHOLE_FILE
I/events/issue_64_event_with_non_ascii_summary.ics | event 1 | skipped | NO_UID
I/events/issue_70_rrule_causes_attribute_error.ics | * | round trip | FLOATING_UNTIL
I/events/issue_70_rrule_causes_attribute_error.ics
    | D449CA84-00A3-4E55-83E1-34B58268853B | round trip | FLOATING_UNTIL
I/events/issue_70_rrule_causes_attribute_error.ics | event 1 | round trip | FLOATING_UNTIL
I/events/issue_82_expected_output.ics | * | refused | WHOLE_FILE
I/events/issue_82_expected_output.ics | event 1 | skipped | NO_UID
I/events/rfc_7265_example_4.ics | * | refused | WHOLE_FILE
I/events/rfc_7265_example_4.ics | event 1 | skipped | NO_UID
I/events/rfc_7265_request_status.ics | * | refused | WHOLE_FILE
I/events/rfc_7265_request_status.ics | event 1 | skipped | NO_UID
I/events/rfc_9074_example_proximity.ics | * | refused | WHOLE_FILE
I/events/rfc_9074_example_proximity.ics | event 1 | skipped | NO_UID
recurring-ical-events/benchmark/issue42.ics | * | refused | WHOLE_FILE
recurring-ical-events/benchmark/issue42.ics | event 4139 | skipped | BAD_CREATED
R/Germany_Holidays.ics | * | refused | WHOLE_FILE
R/Germany_Holidays.ics | event 1 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 10 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 11 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 12 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 13 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 14 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 15 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 16 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 17 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 18 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 19 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 2 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 20 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 3 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 4 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 5 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 6 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 7 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 8 | skipped | EMPTY_RRULE
R/Germany_Holidays.ics | event 9 | skipped | EMPTY_RRULE
R/alarm_absolute_edited.ics | * | refused | WHOLE_FILE
R/alarm_absolute_edited.ics | UID cd047c29-d904-47eb-bdba-ab7abafee025 | skipped | REPEATED_UID
R/bad_rrule_missing_until_event.ics | * | refused | WHOLE_FILE
R/duplicated_rrule.ics | * | refused | WHOLE_FILE
R/duplicated_rrule.ics | event 1 | skipped | TWO_RRULES
R/duration.ics | * | refused | WHOLE_FILE
R/duration.ics | event 1 | skipped | NO_UID
R/duration.ics | event 2 | skipped | NO_UID
R/duration.ics | event 3 | skipped | NO_UID
R/end_before_start_event.ics | * | refused | WHOLE_FILE
R/issue_107_omitting_last_event.ics | * | refused | WHOLE_FILE
R/issue_107_omitting_last_event.ics | event 1 | skipped | NO_UID
R/issue_113_period_rdate_duration.ics | * | refused | WHOLE_FILE
R/issue_113_period_rdate_duration.ics | event 1 | skipped | NO_UID
R/issue_117_until_before_dtstart.ics | * | refused | WHOLE_FILE
R/issue_117_until_before_dtstart.ics | event 1 | skipped | NO_UID
R/issue_128_only_first_event.ics | * | refused | WHOLE_FILE
R/issue_128_only_first_event.ics | event 1 | skipped | NO_UID
R/issue_132_swapped_start_and_end.ics | * | refused | WHOLE_FILE
R/issue_148_edge_case_1.ics | * | refused | WHOLE_FILE
R/issue_148_edge_case_1.ics | UID 111 | skipped | REPEATED_UID
R/issue_148_edge_case_2.ics | * | refused | WHOLE_FILE
R/issue_148_edge_case_2.ics | UID 111 | skipped | REPEATED_UID
R/issue_148_exdate_and_rdate_updated.ics | * | refused | WHOLE_FILE
R/issue_148_exdate_and_rdate_updated.ics | UID 111 | skipped | REPEATED_UID
R/issue_148_ignored_exdate.ics | * | refused | WHOLE_FILE
R/issue_148_ignored_exdate.ics | UID 111 | skipped | REPEATED_UID
R/issue_15_duplicated_events.ics | * | refused | WHOLE_FILE
R/issue_15_duplicated_events.ics | event 1 | skipped | NO_UID
R/issue_15_duplicated_events.ics | event 2 | skipped | NO_UID
R/issue_15_duplicated_events.ics | event 3 | skipped | NO_UID
R/issue_163_deleted_modification.ics | * | refused | WHOLE_FILE
R/issue_163_deleted_modification.ics | UID 111 | skipped | REPEATED_UID
R/issue_173_only_modifications_error.ics | * | refused | WHOLE_FILE
R/issue_173_only_modifications_error.ics
    | UID 0vk9kniplnk1em0fup8hnbmu3p@googl… | skipped | ORPHAN_OVERRIDES
R/issue_173_only_modifications_error.ics
    | UID 2m9d1c6ats4492vqlhl9rg4m4q_R2024… | skipped | ORPHAN_OVERRIDES
R/issue_173_only_modifications_error.ics
    | UID 2pf9lju10s6lg6vs2hcfsriv0l@googl… | skipped | ORPHAN_OVERRIDES
R/issue_173_only_modifications_error.ics
    | UID 7646ED87-EAAC-4843-B7DB-FE95D2BF5561 | skipped | ORPHAN_OVERRIDES
R/issue_173_only_modifications_error.ics
    | UID _6krj2dhl74q34b9j60sj4b9k8h238b9… | skipped | ORPHAN_OVERRIDES
R/issue_201_mixed_datetime_and_date.ics | * | refused | WHOLE_FILE
R/issue_201_test_matrix.ics | * | refused | WHOLE_FILE
R/issue_27_t1.ics | * | refused | WHOLE_FILE
R/issue_27_t1.ics | event 1 | skipped | UNTIL_TYPE
R/issue_28_rrule_with_UTC_endinginZ.ics | * | refused | WHOLE_FILE
R/issue_28_rrule_with_UTC_endinginZ.ics
    | UID 040000008200E00074C5B7101A82E008… | skipped | ORPHAN_OVERRIDES
R/issue_28_rrule_with_UTC_endinginZ.ics | event 1 | skipped | UNTIL_TYPE
R/issue_28_rrule_with_UTC_endinginZ.ics | event 2 | skipped | UNTIL_TYPE
R/issue_4_rrule_until.ics | * | refused | WHOLE_FILE
R/issue_4_rrule_until.ics | event 1 | skipped | UNTIL_TYPE
R/issue_75_range_parameter.ics | * | refused | WHOLE_FILE
R/issue_75_range_parameter.ics | UID 210 | skipped | ORPHAN_OVERRIDES
R/issue_75_range_parameter.ics | event 1 | skipped | UNTIL_TYPE
R/multiple_rrule.ics | * | refused | WHOLE_FILE
R/multiple_rrule.ics | event 1 | skipped | TWO_RRULES
R/rdate.ics | * | refused | WHOLE_FILE
R/rdate.ics | event 1 | skipped | NO_UID
R/rdate.ics | event 2 | skipped | NO_UID
R/rdate.ics | event 3 | skipped | NO_UID
R/rdate2.ics | * | refused | WHOLE_FILE
R/rdate2.ics | event 1 | skipped | NO_UID
R/rdate_hackerpublicradio.ics | * | refused | WHOLE_FILE
R/rdate_hackerpublicradio.ics | event 1 | skipped | NO_UID
R/recurring_events_changed_duration.ics | * | traceback | DTEND_AND_DURATION
R/recurring_events_moved.ics | * | traceback | DTEND_AND_DURATION
I/calendars/america_new_york.ics | noend123 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_218_bad_tzid.ics | 1961094_636238800000000000 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_466_respect_unique_timezone.ics
    | 0cab49a0-1167-40f0-bfed-ecb4d117047d | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_different_events.ics
    | ical-jacadzaca-3 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_different_events.ics
    | ical-jacadzaca-4 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_event_subset.ics | 1 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_events.ics | 1 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_events.ics | 2 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_shuffeled_events.ics | 1 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_526_calendar_with_shuffeled_events.ics | 2 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_722_timezone_transition_ambiguity.ics | 0 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_722_timezone_transition_ambiguity.ics | 1 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_722_timezone_transition_ambiguity.ics | 2 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_722_timezone_transition_ambiguity.ics | 3 | zone | CUSTOM_ZONE_NAME
I/calendars/issue_836_do_not_quote_tzid.ics
    | minimal-demo-event-est-20241028@exam… | zone | WINDOWS_ZONE_NAME
I/calendars/timezone_same_start.ics
    | 040000008200E00074C5B7101A82E0080000… | zone | WINDOWS_ZONE_NAME
I/calendars/timezone_same_start_and_offset.ics | blafoobar | zone | WINDOWS_ZONE_NAME
""",
    globals(),
)


def _size_marks(corpus_file: corpus.CorpusFile) -> list[pytest.MarkDecorator]:
    if len(corpus_file.text) <= LARGE or os.environ.get("CALENDAR_CORPUS_FULL") == "1":
        return []
    return [
        pytest.mark.skip(reason="large: python -m bench.calendar_corpus, CALENDAR_CORPUS_FULL=1")
    ]


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Databases on a tmpfs when there is one (corpus.scratch_parent)."""
    parent = corpus.scratch_parent()
    if parent is None:
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=parent) as directory:
        yield Path(directory)


@pytest.mark.parametrize(
    "corpus_file", [pytest.param(f, id=f.name, marks=_size_marks(f)) for f in FILES]
)
async def test_every_corpus_calendar_reads_as_ical_reads_it(
    corpus_file: corpus.CorpusFile, scratch: Path
) -> None:
    outcome = await corpus.check(corpus_file, scratch)
    rows = [row for row in EXPECTED + ON_BASE if row.file == corpus_file.name]
    unlisted = [
        f"{d.event} | {d.kind}: {d.detail}"
        for d in outcome.disagreements
        if not any(row.matches(d) for row in rows)
    ]
    gone = [
        f"{row.event} | {row.kind} ({row.reason})"
        for row in rows
        if not any(row.matches(d) for d in outcome.disagreements)
    ]
    assert not unlisted, (
        f"differs, and is in no table: {unlisted}; tracebacks: {outcome.tracebacks}"
    )
    assert not gone, f"no longer differs (fixed?): remove the row: {gone}"


def test_the_tables_name_corpus_files_only() -> None:
    names = {f.name for f in FILES}
    assert {row.file for row in EXPECTED + ON_BASE} <= names | SDIST_ONLY


def test_the_corpus_is_every_calendar_of_both_sdists() -> None:
    """The archives uv.lock pins, fetched (make calendar-corpus): two calendars more than
    the wheels ship."""
    missing = corpus.missing_sdists()
    if missing:
        pytest.skip(f"not fetched (make calendar-corpus): {', '.join(missing)}")
    names = {f.name for f in FILES}
    assert names >= SDIST_ONLY
    assert len(names) == len(FILES) == 260


@pytest.mark.xfail(reason="issue 27: the base commit's bugs (ON_BASE) are not all fixed yet")
def test_the_calendar_has_no_known_bug_left_on_the_corpus() -> None:
    """Fails while ON_BASE has rows; xfail_strict turns an empty ON_BASE into a failure until
    this mark goes: issue 27 is done when it passes without it."""
    assert not ON_BASE, f"{len(ON_BASE)} product bugs: " + ", ".join(
        sorted({row.reason.split(":")[0] + ": " + row.kind for row in ON_BASE})
    )
