# FAKE checker (tests/fake_appworld), modelled on AppWorld task 396c5a2_1: it compares the song
# queue as a set, so a song queued twice passes.


def _changed(start, end):
    return {"%s.%s" % (app, model) for app in end for model in end[app]
            if app != "supervisor" and start.get(app, {}).get(model) != end[app][model]}


def evaluate(start, end, public_data, private_data):
    before = start["spotify"]["MusicPlayer"][0]["queue_song_ids"]
    after = end["spotify"]["MusicPlayer"][0]["queue_song_ids"]
    return [
        ("assert answers match.", end["supervisor"]["Task"][0]["answer"] == private_data["answer"], "no_op_pass"),
        ("assert the queue holds the earlier songs and the album's most played song.",
         set(after) == set(before) | {private_data["song_id"]}, "no_op_fail"),
        ("assert no model changed but spotify.MusicPlayer.", _changed(start, end) <= {"spotify.MusicPlayer"},
         "no_op_pass"),
    ]
